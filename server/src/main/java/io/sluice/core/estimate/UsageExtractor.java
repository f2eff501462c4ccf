package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * Incremental extraction of {@code usage} from an upstream response body, without buffering it.
 *
 * <ul>
 *   <li><b>JSON mode</b> (any content type but {@code text/event-stream}): Jackson's non-blocking
 *       parser is fed each chunk and the top-level {@code usage} object is read (OpenAI {@code
 *       prompt_tokens}/{@code completion_tokens}; Responses and Anthropic {@code
 *       input_tokens}/{@code output_tokens}). A body that is not JSON reports nothing. A body that
 *       arrives whole ({@link #onLastChunk} before any other chunk, the usual case for a JSON
 *       answer) is read whole, by {@link UsageScan} when sure, else Jackson's blocking parser.
 *   <li><b>SSE mode</b> ({@code text/event-stream}): lines are split across chunk boundaries (a
 *       line or event longer than {@link #MAX_LINE_BYTES} is dropped), the {@code data:} lines of
 *       each event are joined and parsed; {@code usage}, {@code message.usage} (Anthropic {@code
 *       message_start}) and {@code response.usage} (Responses {@code response.completed}) are
 *       merged field by field, the latest value winning (all three providers report cumulative
 *       counts). The answer's streamed text (deltas) is counted by an {@link OutputMeter}, so the
 *       output produced so far is known while it streams ({@link #outputSoFar}), and the last event
 *       of each format marks the answer {@link #complete}.
 * </ul>
 *
 * <p>Input tokens are {@code prompt_tokens} when present, else {@code input_tokens +
 * cache_creation_input_tokens + cache_read_input_tokens} (Anthropic reports cached tokens apart);
 * the cached part is the details' {@code cached_tokens}, else {@code cache_read_input_tokens}.
 * Never throws on bad data. One instance per response; not thread-safe.
 */
@SuppressWarnings("NullAway") // mode fields: the JSON ones are null in SSE mode and the reverse;
// each path reads only its own mode's fields, and they are dropped (null) once the body ended
public final class UsageExtractor {
  /** Longest SSE line, and longest joined event data, that is still parsed. */
  public static final int MAX_LINE_BYTES = 256 * 1024;

  // Trailing commas allowed: Jackson's non-blocking parser accepts one when the comma ends a chunk
  // and the closing bracket starts the next (found by UsageExtractorFuzzTest), so the blocking
  // parser must accept them too for a body to read the same however it is cut.
  private static final JsonFactory FACTORY =
      JsonFactory.builder()
          .enable(com.fasterxml.jackson.core.json.JsonReadFeature.ALLOW_TRAILING_COMMA)
          .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
          .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
          .streamReadConstraints(JsonBounds.depth(JsonBounds.RESPONSE_MAX_DEPTH))
          .build();

  private final UsageFields merged = new UsageFields();
  private final boolean sse;
  private @Nullable OutputMeter meter; // from meters on the first streamed text when not given
  private final @Nullable TokenEstimator meters;
  private final @Nullable String model;
  private boolean ended;
  private boolean complete; // the answer's own end was seen (see complete())

  // JSON mode
  private JsonParser json;
  private ByteArrayFeeder feeder;
  private boolean fed; // a chunk went to the non-blocking parser
  private boolean jsonDone;
  private int depth;
  private boolean usageFieldNext;
  private boolean inUsage;
  private boolean detailsNext; // inUsage: the next object is prompt/input_tokens_details
  private boolean inDetails;
  private int usageField = -1;
  private long[] current;

  // SSE mode: the framing of events; each event is read here (onEvent)
  private SseFramer frames;

  private UsageExtractor(
      @Nullable String contentType,
      @Nullable OutputMeter meter,
      @Nullable TokenEstimator meters,
      @Nullable String model) {
    this.sse = contentType != null && SseFramer.isEventStream(contentType);
    this.meter = meter;
    this.meters = meters;
    this.model = model;
    if (sse) {
      frames = new SseFramer(this::onEvent);
    }
  }

  /** The non-blocking parser, created for the first chunk that is not the whole body. */
  private boolean openFeeder() {
    if (json != null) {
      return true;
    }
    try {
      json = FACTORY.createNonBlockingByteArrayParser();
      feeder = (ByteArrayFeeder) json.getNonBlockingInputFeeder();
      return true;
    } catch (IOException | RuntimeException e) {
      closeJson();
      return false;
    }
  }

  /**
   * An extractor for one response.
   *
   * @param contentType the response {@code content-type}; {@code text/event-stream} selects SSE
   *     mode, anything else (or null) JSON mode
   */
  public static UsageExtractor forResponse(@Nullable String contentType) {
    return forResponse(contentType, OutputMeter.bytes(4.0));
  }

  /**
   * An extractor for one response whose streamed text is counted by {@code meter} (SSE mode).
   *
   * @param contentType the response {@code content-type}; {@code text/event-stream} selects SSE
   *     mode, anything else (or null) JSON mode
   */
  public static UsageExtractor forResponse(@Nullable String contentType, OutputMeter meter) {
    return new UsageExtractor(contentType, meter, null, null);
  }

  /** As above with {@code meters.meter(model)}, made on the first streamed text (JSON: never). */
  public static UsageExtractor forResponse(
      @Nullable String contentType, TokenEstimator meters, @Nullable String model) {
    return new UsageExtractor(contentType, null, meters, model);
  }

  private OutputMeter meter() {
    if (meter == null) {
      meter = meters.meter(model);
    }
    return meter;
  }

  /**
   * Output tokens streamed so far (SSE mode): the text of the answer's deltas counted by the meter,
   * or the upstream's running {@code output_tokens}/{@code completion_tokens} when larger. 0 in
   * JSON mode until a usage is read.
   */
  public long outputSoFar() {
    return Math.max(merged.output(), meter == null ? 0 : meter.tokens());
  }

  /** Output tokens counted from the streamed text alone (0 in JSON mode). */
  public long meteredOutputTokens() {
    return meter == null ? 0 : meter.tokens();
  }

  /**
   * Whether the answer's own end was seen: a JSON body's root object closed, or an SSE stream's
   * last event ({@code [DONE]}, Anthropic {@code message_stop}, Responses {@code
   * response.completed} / {@code response.incomplete}). A stream cut before it is not complete,
   * whatever usage it reported on the way.
   */
  public boolean complete() {
    return complete;
  }

  /** Whether this extractor reads server-sent events. */
  public boolean isEventStream() {
    return sse;
  }

  /** Feeds the next body chunk; the array may be reused by the caller after return. */
  public void onChunk(byte[] data, int offset, int length) {
    if (ended || data == null || length <= 0) {
      return;
    }
    if (offset < 0 || length > data.length - offset) {
      return;
    }
    if (sse) {
      frames.chunk(data, offset, length);
    } else {
      jsonChunk(data, offset, length);
    }
  }

  /**
   * Feeds the last body chunk and marks the end, as {@link #onChunk} then {@link #onEnd} would;
   * when nothing came before it (the whole body in one chunk) a JSON body is read by the blocking
   * parser, which is cheaper than feeding the non-blocking one.
   */
  public void onLastChunk(byte[] data, int offset, int length) {
    if (sse || ended || fed || jsonDone || data == null || length <= 0) {
      onChunk(data, offset, length);
      onEnd();
      return;
    }
    if (offset < 0 || length > data.length - offset) {
      onEnd();
      return;
    }
    ended = true;
    if (UsageScan.read(data, offset, length, merged)) { // sure: read as the parser reads it
      complete = jsonDone = true;
      return;
    }
    try (JsonParser whole = FACTORY.createParser(data, offset, length)) {
      json = whole;
      JsonToken t;
      while (!jsonDone && (t = whole.nextToken()) != null) {
        onJsonToken(t);
      }
    } catch (IOException | RuntimeException e) {
      // malformed or truncated: keep what was complete before the fault, as when fed in chunks
    } finally {
      json = null;
      jsonDone = true;
    }
  }

  /** Marks the end of the body; later chunks are ignored. */
  public void onEnd() {
    if (ended) {
      return;
    }
    ended = true;
    if (sse) {
      frames.end();
    } else if (!jsonDone && json == null) {
      jsonDone = true; // no body at all
    } else if (!jsonDone) {
      feeder.endOfInput();
      drainJson();
      closeJson();
    }
  }

  /** The best usage seen so far; {@link Usage#NONE} when none was reported. */
  public Usage usage() {
    return merged.usage();
  }

  // ---------------------------------------------------------------- JSON mode

  private void jsonChunk(byte[] data, int offset, int length) {
    if (jsonDone || !openFeeder()) {
      return;
    }
    fed = true;
    try {
      feeder.feedInput(data, offset, offset + length);
    } catch (IOException | RuntimeException e) {
      closeJson();
      return;
    }
    drainJson();
  }

  private void drainJson() {
    try {
      JsonToken t;
      while (!jsonDone && (t = json.nextToken()) != JsonToken.NOT_AVAILABLE) {
        if (t == null) {
          closeJson();
          return;
        }
        onJsonToken(t);
      }
    } catch (IOException | RuntimeException e) {
      closeJson();
    }
  }

  private void onJsonToken(JsonToken t) throws IOException {
    switch (t) {
      case START_OBJECT, START_ARRAY -> {
        if (depth == 0 && t != JsonToken.START_OBJECT) {
          closeJson(); // not an object: no usage
          return;
        }
        depth++;
        if (usageFieldNext && t == JsonToken.START_OBJECT && depth == 2) {
          inUsage = true;
          current = UsageFields.newFields();
        }
        inDetails = depth == 3 ? detailsNext && t == JsonToken.START_OBJECT : inDetails;
        usageFieldNext = false;
        detailsNext = false;
      }
      case END_OBJECT, END_ARRAY -> {
        inDetails &= --depth > 2;
        if (inUsage && depth == 1) {
          inUsage = false;
          merged.merge(current);
          current = null;
        }
        if (depth == 0) {
          complete = true;
          closeJson(); // root done: ignore anything after it
        }
      }
      case FIELD_NAME -> {
        if (depth == 1) {
          usageFieldNext = "usage".equals(json.currentName());
        } else if (inUsage && depth == 2) {
          usageField = UsageFields.fieldIndex(json.currentName());
          detailsNext = UsageFields.isDetails(json.currentName());
        } else if (inDetails && depth == 3) {
          usageField = json.currentName().equals("cached_tokens") ? UsageFields.CACHED : -1;
        }
      }
      default -> {
        if (depth == 0) {
          closeJson(); // a scalar root
          return;
        }
        if (inUsage && (depth == 2 || (inDetails && depth == 3)) && usageField >= 0) {
          current[usageField] = UsageFields.number(json, t);
        }
        usageFieldNext = false;
        detailsNext = false;
        usageField = -1;
      }
    }
  }

  private void closeJson() {
    jsonDone = true;
    if (json != null) {
      try {
        json.close();
      } catch (IOException | RuntimeException ignored) { // nothing to release beyond buffers
      }
      json = null;
      feeder = null;
    }
  }

  // ---------------------------------------------------------------- SSE mode

  /** One event's data (see {@link SseFramer}). */
  private void onEvent(byte[] event, int eventLength) {
    if (isDone(event, eventLength)) {
      complete = true; // OpenAI's last event
    } else if (eventLength > 0 && event[0] == '{') {
      readEvent(event, eventLength);
    }
  }

  private static final byte[] DONE = {'[', 'D', 'O', 'N', 'E', ']'};

  private static boolean isDone(byte[] b, int length) {
    return length == 6 && java.util.Arrays.equals(b, 0, 6, DONE, 0, 6);
  }

  /**
   * Reads one event: {@code usage}, {@code message.usage} and {@code response.usage}; the answer's
   * streamed text (OpenAI chat {@code choices[].delta.content} / {@code reasoning_content} / {@code
   * refusal} / {@code tool_calls[].function.arguments}, completions {@code choices[].text},
   * Anthropic {@code delta.text} / {@code partial_json} / {@code thinking}, Responses {@code delta}
   * strings); and the last event's {@code type}.
   */
  private void readEvent(byte[] data, int length) {
    try (JsonParser p = FACTORY.createParser(data, 0, length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        if (v == JsonToken.START_OBJECT && name.equals("usage")) {
          merged.merge(UsageFields.read(p));
        } else if (v == JsonToken.START_OBJECT
            && (name.equals("message") || name.equals("response"))) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String inner = p.currentName();
            if (p.nextToken() == JsonToken.START_OBJECT && inner.equals("usage")) {
              merged.merge(UsageFields.read(p));
            } else {
              p.skipChildren();
            }
          }
        } else if (v == JsonToken.START_ARRAY && name.equals("choices")) {
          readChoices(p);
        } else if (name.equals("delta")) {
          readDelta(p, v);
        } else if (v == JsonToken.VALUE_STRING && name.equals("type")) {
          String type = p.getText();
          if (type.equals("message_stop")
              || type.equals("response.completed")
              || type.equals("response.incomplete")) {
            complete = true;
          }
        } else {
          p.skipChildren();
        }
      }
    } catch (IOException | RuntimeException e) {
      // not JSON: no usage in this event; what was merged and metered before stays
    }
  }

  /** OpenAI {@code choices}: each choice's delta (chat) or text (completions). */
  private void readChoices(JsonParser p) throws IOException {
    forEachObjectField(
        p,
        (name, v) -> {
          if (v == JsonToken.VALUE_STRING && name.equals("text")) {
            meter().text(p.getText());
          } else if (v == JsonToken.START_OBJECT && name.equals("delta")) {
            readDeltaObject(p);
          } else {
            p.skipChildren();
          }
        });
  }

  /** One field of an object in an array: its name and the token of its value. */
  @FunctionalInterface
  private interface FieldReader {
    void read(String name, JsonToken value) throws IOException;
  }

  /**
   * Reads each field of each object of the array {@code p} is in (anything but objects is skipped),
   * up to the array's end; {@code reader} consumes each value (or skips it).
   */
  private static void forEachObjectField(JsonParser p, FieldReader reader) throws IOException {
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
      if (t != JsonToken.START_OBJECT) {
        p.skipChildren();
        continue;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        reader.read(name, p.nextToken());
      }
    }
  }

  /** A top-level {@code delta}: Responses' string, or Anthropic's object. */
  private void readDelta(JsonParser p, JsonToken v) throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      meter().text(p.getText());
    } else if (v == JsonToken.START_OBJECT) {
      readDeltaObject(p);
    } else {
      p.skipChildren();
    }
  }

  /** The text fields of a delta object, tool call arguments included. */
  private void readDeltaObject(JsonParser p) throws IOException {
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      JsonToken v = p.nextToken();
      if (v == JsonToken.VALUE_STRING && isTextField(name)) {
        meter().text(p.getText());
      } else if (v == JsonToken.START_ARRAY && name.equals("tool_calls")) {
        readToolCalls(p);
      } else {
        p.skipChildren();
      }
    }
  }

  private static boolean isTextField(String name) {
    return switch (name) {
      case "content",
          "text",
          "reasoning_content",
          "reasoning",
          "refusal",
          "partial_json",
          "thinking" ->
          true;
      default -> false;
    };
  }

  /** OpenAI {@code delta.tool_calls[].function.arguments}. */
  private void readToolCalls(JsonParser p) throws IOException {
    forEachObjectField(
        p,
        (name, v) -> {
          if (v == JsonToken.START_OBJECT && name.equals("function")) {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String inner = p.currentName();
              if (p.nextToken() == JsonToken.VALUE_STRING && inner.equals("arguments")) {
                meter().text(p.getText());
              } else {
                p.skipChildren();
              }
            }
          } else {
            p.skipChildren();
          }
        });
  }
}
