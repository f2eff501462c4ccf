package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.knuddels.jtokkit.api.Encoding;
import java.io.IOException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Estimates the input tokens and the output reserve of an LLM request from its body.
 *
 * <p>Input tokens are the BPE count of the prompt text when the model belongs to a known OpenAI
 * family ({@code o200k_base} / {@code cl100k_base}), otherwise the prompt text's UTF-8 bytes
 * divided by {@link EstimatorSettings#bytesPerToken()}; plus fixed costs for messages, images,
 * attachments and tool definitions. A body that cannot be read as its format is estimated with the
 * byte heuristic over the whole body and a {@link FallbackCause}; {@link #estimate} never throws on
 * bad input. See docs/estimation.md.
 *
 * <p>Concurrency: thread-safe and reusable; each call allocates only its parsers and a tally.
 */
public final class TokenEstimator {
  private final EstimatorSettings settings;
  private final JsonFactory jsonFactory;
  private final ModelEncodings encodings;
  private final TokenCountCache counts;
  private final @Nullable LearnedBytesPerToken learned; // the headers' ratio, or the configured
  private boolean plainReads = true; // chat bodies read from their bytes where they can be

  /**
   * An estimator that tokenizes every piece (no {@link TokenCountCache}) at the configured
   * bytes-per-token.
   */
  public static TokenEstimator uncached(EstimatorSettings settings) {
    return new TokenEstimator(settings, TokenCountCache.disabled(), null);
  }

  /**
   * @param counts token counts of pieces already seen, shared by every estimator of the server
   * @param learned the learned bytes-per-token of the headers' estimates, or null: {@link
   *     EstimatorSettings#bytesPerToken()}
   */
  public TokenEstimator(
      EstimatorSettings settings, TokenCountCache counts, @Nullable LearnedBytesPerToken learned) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.counts = Objects.requireNonNull(counts, "counts");
    this.jsonFactory = newJsonFactory(settings.maxJsonDepth());
    this.encodings = new ModelEncodings();
    this.learned = learned;
  }

  /**
   * A factory that never echoes source text in errors and never interns body field names, and reads
   * {@code NaN}, {@code Infinity} and {@code -Infinity} as Python's {@code json} does.
   */
  static JsonFactory newJsonFactory(int maxJsonDepth) {
    return JsonFactory.builder()
        .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS) // Python's json reads NaN, Infinity
        .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
        .streamReadConstraints(
            StreamReadConstraints.builder().maxNestingDepth(maxJsonDepth + 1).build())
        .build();
  }

  public EstimatorSettings settings() {
    return settings;
  }

  /**
   * Estimates {@code body[offset, offset + length)} as {@code format}. Never throws on bad input:
   * falls back to the byte heuristic with {@link TokenEstimate#fallbackCause()} set.
   *
   * @param format the configured format; {@link RequestFormat#AUTO} (or null) detects it from the
   *     JSON keys
   * @throws IndexOutOfBoundsException when offset/length are outside {@code body}
   */
  public TokenEstimate estimate(
      @Nullable RequestFormat format,
      byte @Nullable [] body,
      int offset,
      int length,
      EstimateLimits limits) {
    return estimate(format, body, offset, length, limits, null);
  }

  /**
   * As {@link #estimate(RequestFormat, byte[], int, int, EstimateLimits)}, and notes in {@code
   * shape} (when not null) the answers asked for and whether a cap was set.
   */
  public TokenEstimate estimate(
      @Nullable RequestFormat format,
      byte @Nullable [] body,
      int offset,
      int length,
      EstimateLimits limits,
      @Nullable OutputShape shape) {
    Objects.requireNonNull(limits, "limits");
    if (shape != null) {
      shape.reset();
    }
    if (body == null || length == 0) {
      return fallback(FallbackCause.EMPTY, 0, null, limits);
    }
    Objects.checkFromIndexSize(offset, length, body.length);
    // a known format: its prompt is tallied by the scan where it can be (one pass over the body);
    // a plain chat body is read from its bytes (ChatScan), any other with Jackson
    ScanWalk on = format == null || format == RequestFormat.AUTO ? null : scanWalk(format);
    BodyScan plain =
        on == null || !plainReads
            ? null
            : ChatScan.read(
                on, body, offset, length, settings, jsonFactory.streamReadConstraints());
    if (plain == null) {
      if (!Utf8.isValid(body, offset, length)) {
        if (shape != null && Utf8.pythonReadsAsJson(body, offset, length)) {
          shape.read("the body is JSON that is not UTF-8 (send UTF-8)", false);
        }
        return fallback(FallbackCause.NOT_UTF8, length, null, limits);
      }
      if (on != null && plainReads && ChatScan.reads(format)) {
        on = scanWalk(on.format()); // the plain read may have fed the first
      }
    }
    // the Jackson reader only for a body the plain read left to it (or whose prompt it must walk)
    @Nullable RequestBodyReader reader = null;
    @Nullable BodyScan scan = null;
    @Nullable RequestFormat resolved = null;
    try {
      BodyScan scanned;
      if (plain != null) {
        scanned = plain;
      } else {
        reader = reader(body, offset, length);
        scanned = reader.scan(on);
      }
      scan = scanned;
      if (scan.empty) {
        return fallback(FallbackCause.EMPTY, length, null, limits);
      }
      resolved = on == null ? scan.detect() : on.format();
      if (shape != null) {
        shape.read(scan.invalid(resolved), true);
      }
      if (resolved == null) {
        return noted(
            shape, null, scan, fallback(FallbackCause.UNKNOWN_FORMAT, length, scan, limits));
      }
      Encoding encoding = encodings.forModel(scan.model);
      TokenTally tally = on == null ? null : on.result(scan.model);
      boolean read;
      if (on != null && tally != null) {
        read = ScanWalk.finish(settings, resolved, on.sawInput(), tally);
      } else {
        tally =
            new TokenTally(encoding, counts, settings.bytesPerToken(), settings.maxTokenizeChars());
        read = (reader != null ? reader : reader(body, offset, length)).walk(resolved, tally);
      }
      if (!read) {
        return noted(
            shape,
            resolved,
            scan,
            fallback(FallbackCause.MISSING_INPUT, length, scan, limits, resolved));
      }
      long reserve = reserve(resolved, scan, limits);
      note(shape, resolved, scan);
      return new TokenEstimate(
          tally.tokens(),
          reserve & Long.MAX_VALUE,
          method(encoding),
          null,
          scan.model,
          scan.stream,
          reserve < 0,
          scan.fanOut(resolved),
          -1);
    } catch (ReadFailure e) {
      if (e == ReadFailure.TOO_DEEP) {
        unread(shape, "the body nests deeper than Sluice reads (estimation.maxJsonDepth)");
      }
      return noted(
          shape, resolved, scan, fallback(e.fallbackCause(), length, scan, limits, resolved));
    } catch (JsonEOFException e) {
      return fallback(FallbackCause.TRUNCATED, length, null, limits);
    } catch (StreamConstraintsException e) {
      unread(shape, "a value in the body is larger than Sluice reads");
      return fallback(FallbackCause.TOO_LARGE, length, null, limits);
    } catch (JsonParseException e) {
      return fallback(parseFailureCause(e, length), length, null, limits);
    } catch (IOException e) {
      return fallback(FallbackCause.NOT_JSON, length, null, limits);
    } catch (RuntimeException e) {
      return noted(
          shape,
          resolved,
          scan,
          fallback(FallbackCause.INTERNAL_ERROR, length, scan, limits, resolved));
    }
  }

  /**
   * A body Python's {@code json} reads but Sluice cannot (too deep, too large): refused, as its
   * members cannot be read the engine's way.
   */
  private static void unread(@Nullable OutputShape shape, String why) {
    if (shape != null) {
      shape.read(why, false);
    }
  }

  /**
   * Classifies a Jackson syntax error: at the end of the input it is {@code truncated} (Jackson
   * reports some end-of-input cases without {@link JsonEOFException}); invalid UTF-8 that slipped
   * past the validator is {@code not_utf8}; anything else {@code not_json}.
   */
  private static String parseFailureCause(JsonParseException e, int length) {
    JsonLocation location = e.getLocation();
    if (location != null && location.getByteOffset() >= length) {
      return FallbackCause.TRUNCATED;
    }
    String message = e.getOriginalMessage();
    if (message != null && message.contains("end-of-input")) {
      return FallbackCause.TRUNCATED;
    }
    if (message != null && message.contains("UTF-8")) {
      return FallbackCause.NOT_UTF8;
    }
    return FallbackCause.NOT_JSON;
  }

  /**
   * A meter of the output an answer streams: BPE with the encoding of {@code model} when it is a
   * known OpenAI family, else the byte heuristic ({@link EstimatorSettings#bytesPerToken()}).
   */
  public OutputMeter meter(@Nullable String model) {
    return new OutputMeter(encodings.forModel(model), settings.bytesPerToken());
  }

  /** Convenience for a whole array. */
  public TokenEstimate estimate(RequestFormat format, byte[] body, EstimateLimits limits) {
    return estimate(format, body, 0, body == null ? 0 : body.length, limits);
  }

  /**
   * Estimates from the {@code content-length} header alone (body not buffered): the byte heuristic
   * over the whole length and the default output reserve. A negative length counts as 0.
   */
  public TokenEstimate fromContentLength(long contentLengthBytes, EstimateLimits limits) {
    return fromContentLength(contentLengthBytes, settings.bytesPerToken(), limits);
  }

  /**
   * The estimate at the headers of a request of {@code pool} asking {@code model} (null: not
   * declared): the content-length over the learned ratio of the pool and model ({@link
   * LearnedBytesPerToken#bytesPerToken}), the configured one without learning.
   */
  public TokenEstimate fromContentLength(
      long contentLengthBytes, String pool, @Nullable String model, EstimateLimits limits) {
    LearnedBytesPerToken l = learned;
    double ratio = l == null ? settings.bytesPerToken() : l.bytesPerToken(pool, model);
    return fromContentLength(contentLengthBytes, ratio, limits);
  }

  /**
   * As {@link #fromContentLength(long, EstimateLimits)}, the length divided by {@code
   * bytesPerToken} (a learned ratio: {@link LearnedBytesPerToken}); the estimate keeps the length
   * ({@link TokenEstimate#contentLengthBytes}) for the ratio to learn from.
   */
  public TokenEstimate fromContentLength(
      long contentLengthBytes, double bytesPerToken, EstimateLimits limits) {
    Objects.requireNonNull(limits, "limits");
    if (!(bytesPerToken > 0)) {
      throw new IllegalArgumentException("bytesPerToken: " + bytesPerToken + " (expected: > 0)");
    }
    long bytes = Math.max(0, contentLengthBytes);
    return new TokenEstimate(
        TokenTally.ceil(bytes / bytesPerToken),
        limits.defaultOutputTokens(),
        TokenEstimate.METHOD_CONTENT_LENGTH,
        null,
        null,
        false,
        false,
        FanOut.NONE,
        bytes);
  }

  /**
   * A request with a body whose size is unknown when it is decided (headers-time decision, no
   * content-length): the configured default input estimate and the default output reserve.
   */
  public TokenEstimate unknownSize(long defaultInputTokens, EstimateLimits limits) {
    Objects.requireNonNull(limits, "limits");
    return new TokenEstimate(
        Math.max(0, defaultInputTokens),
        limits.defaultOutputTokens(),
        TokenEstimate.METHOD_DEFAULT,
        null,
        null,
        false,
        false,
        FanOut.NONE,
        -1);
  }

  private TokenEstimate fallback(
      String cause, long bodyBytes, @Nullable BodyScan scan, EstimateLimits limits) {
    return fallback(cause, bodyBytes, scan, limits, null);
  }

  private TokenEstimate fallback(
      String cause,
      long bodyBytes,
      @Nullable BodyScan scan,
      EstimateLimits limits,
      @Nullable RequestFormat format) {
    long reserve;
    if (scan == null) {
      reserve = limits.defaultOutputTokens();
    } else {
      reserve = reserve(format != null ? format : scan.detect(), scan, limits);
    }
    return new TokenEstimate(
        TokenTally.ceil(bodyBytes / settings.bytesPerToken()),
        reserve & Long.MAX_VALUE,
        TokenEstimate.METHOD_BYTES,
        cause,
        scan == null ? null : scan.model,
        scan != null && scan.stream,
        reserve < 0,
        scan == null ? FanOut.NONE : scan.fanOut(format != null ? format : scan.detect()),
        -1);
  }

  /**
   * Notes the answers and the cap of a scanned body in {@code shape} (as {@link #reserve} reads
   * them).
   */
  private static void note(
      @Nullable OutputShape shape, @Nullable RequestFormat format, @Nullable BodyScan scan) {
    if (shape == null || scan == null) {
      return;
    }
    RequestFormat f = format != null ? format : scan.detect();
    long cap = capField(f, scan);
    shape.set(
        choices(f, scan),
        cap != RequestBodyReader.CAP_ABSENT && cap != RequestBodyReader.CAP_INVALID && cap > 0);
  }

  private static TokenEstimate noted(
      @Nullable OutputShape shape,
      @Nullable RequestFormat format,
      @Nullable BodyScan scan,
      TokenEstimate estimate) {
    note(shape, format, scan);
    return estimate;
  }

  /**
   * The output reserve for {@code format}, with the sign bit set when clamped (decoded by the
   * callers; avoids an allocation per request).
   */
  static long reserve(@Nullable RequestFormat format, BodyScan scan, EstimateLimits limits) {
    long one = reserveOfOneAnswer(format, scan, limits);
    int choices = choices(format, scan);
    if (choices == 1) {
      return one;
    }
    return ((one & Long.MAX_VALUE) * choices) | (one & Long.MIN_VALUE);
  }

  /**
   * How many answers the request asks the upstream to generate: {@code n} for OpenAI chat and
   * completions, and for completions {@code best_of} when larger (that many candidates are
   * generated to return the best {@code n}); 1 for the other formats.
   */
  static int choices(@Nullable RequestFormat format, BodyScan scan) {
    if (format == RequestFormat.OPENAI_CHAT) {
      return scan.n;
    }
    if (format == RequestFormat.OPENAI_COMPLETIONS || format == RequestFormat.AUTO) {
      return Math.max(scan.n, scan.bestOf);
    }
    return 1;
  }

  /** The output reserve of one answer, with the sign bit set when clamped. */
  private static long reserveOfOneAnswer(
      @Nullable RequestFormat format, BodyScan scan, EstimateLimits limits) {
    long cap = capField(format, scan);
    if (cap == 0) {
      return 0; // embeddings: no output
    }
    if (cap == RequestBodyReader.CAP_ABSENT) {
      return limits.defaultOutputTokens();
    }
    if (cap == RequestBodyReader.CAP_INVALID) {
      return limits.defaultOutputTokens() | Long.MIN_VALUE;
    }
    if (cap > limits.maxOutputTokens()) {
      return limits.maxOutputTokens() | Long.MIN_VALUE;
    }
    return cap;
  }

  /** The format's output cap field as scanned (0 for embeddings). */
  private static long capField(@Nullable RequestFormat format, BodyScan scan) {
    long cap;
    if (format == null) {
      cap = firstPresent(scan.maxCompletionTokens, scan.maxTokens, scan.maxOutputTokens);
    } else {
      cap =
          switch (format) {
            case OPENAI_EMBEDDINGS -> 0;
            case OPENAI_CHAT -> firstPresent(scan.maxCompletionTokens, scan.maxTokens);
            case OPENAI_RESPONSES -> scan.maxOutputTokens;
            case OPENAI_COMPLETIONS, ANTHROPIC_MESSAGES -> scan.maxTokens;
            case AUTO ->
                firstPresent(scan.maxCompletionTokens, scan.maxTokens, scan.maxOutputTokens);
          };
    }
    return cap;
  }

  private static long firstPresent(long cap, long then) { // no array per request
    return cap != RequestBodyReader.CAP_ABSENT ? cap : then;
  }

  private static long firstPresent(long cap, long then, long last) {
    return firstPresent(cap, firstPresent(then, last));
  }

  static String method(@Nullable Encoding encoding) {
    if (encoding == null) {
      return TokenEstimate.METHOD_BYTES;
    }
    return encoding == ModelEncodings.o200k()
        ? TokenEstimate.METHOD_BPE_O200K
        : TokenEstimate.METHOD_BPE_CL100K;
  }

  private RequestBodyReader reader(byte[] body, int offset, int length) {
    return new RequestBodyReader(jsonFactory, body, offset, length, settings);
  }

  private ScanWalk scanWalk(RequestFormat format) {
    return new ScanWalk(format, encodings, counts, settings);
  }

  /** Test hook: the same estimator reading every body with Jackson (false), or as configured. */
  TokenEstimator plainReads(boolean on) {
    TokenEstimator e = new TokenEstimator(settings, counts, learned);
    e.plainReads = on;
    return e;
  }

  /** Test hook: the tally of a readable body, for calibration. */
  TokenTally tally(RequestFormat format, byte[] body, Encoding encoding) throws IOException {
    RequestBodyReader reader = reader(body, 0, body.length);
    BodyScan scan = reader.scan();
    RequestFormat resolved = format == RequestFormat.AUTO ? scan.detect() : format;
    TokenTally tally = new TokenTally(encoding, counts, settings.bytesPerToken(), Long.MAX_VALUE);
    reader.walk(java.util.Objects.requireNonNull(resolved, "format not detected"), tally);
    return tally;
  }
}
