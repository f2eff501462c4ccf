package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.Charset;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.LongStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Differential: Sluice's reading of each member it uses against the engine's reading of the same
 * body (docs/estimation.md, One reading of a body), over seeded hostile bodies ({@link
 * HostileBodies}). The engine is a Python server: Python's {@code json} on the bytes, then pydantic
 * in lax mode, then the engine's own range checks (a cap or {@code n} below 1 is refused). Two
 * references: one written here in Java (a Jackson tree, whose duplicate members keep the last
 * value, after Python's decoding and literal rules; pydantic's lax conversions by hand), and
 * python3 with pydantic itself when the machine has them (skipped otherwise).
 *
 * <p>For every body: Sluice refuses it {@code invalid_request} ({@link OutputShape#invalid()}), or
 * the engine refuses it (nothing runs), or Sluice reads the engine's model, stream, cap, answers
 * and tool count, and a priority rewrite keeps every one of them as the engine read it.
 */
class BodyReadingDifferentialTest {
  private static final TokenEstimator ESTIMATOR =
      TokenEstimator.uncached(EstimatorSettings.defaults());
  private static final long MAX_OUT = 1L << 40;
  private static final EstimateLimits LIMITS = new EstimateLimits(512, MAX_OUT);
  private static final ObjectMapper TREE =
      JsonMapper.builder()
          .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();
  private static final JsonFactory TOKENS =
      JsonFactory.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();
  private static final int BODIES_PER_SEED = 200;

  /** The engine's reading of the members Sluice uses; {@code refused}: the engine answers 4xx. */
  record Reading(
      boolean refused,
      @Nullable String model,
      boolean stream,
      @Nullable BigInteger maxTokens,
      @Nullable BigInteger maxCompletionTokens,
      @Nullable BigInteger maxOutputTokens,
      @Nullable BigInteger n,
      @Nullable BigInteger bestOf,
      @Nullable Integer tools,
      @Nullable Integer functions,
      @Nullable Double priority) {
    static final Reading REFUSED =
        new Reading(true, null, false, null, null, null, null, null, null, null, null);
  }

  static LongStream seeds() {
    return LongStream.range(1, 21);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void sluiceReadsEachMemberAsTheReference_orRefusesInvalidRequest(long seed) {
    for (HostileBodies.Body b : HostileBodies.generate(seed, BODIES_PER_SEED)) {
      check(b, reference(b.bytes()));
    }
  }

  @Test
  void sluiceReadsEachMemberAsPythonAndPydantic_orRefusesInvalidRequest() throws Exception {
    List<HostileBodies.Body> bodies = new ArrayList<>();
    seeds().forEach(seed -> bodies.addAll(HostileBodies.generate(seed, BODIES_PER_SEED)));
    List<Reading> python = python(bodies);
    Assumptions.assumeTrue(python != null, "python3 with pydantic is not available");
    int agreed = 0;
    for (int i = 0; i < bodies.size(); i++) {
      check(bodies.get(i), python.get(i));
      if (python.get(i).equals(reference(bodies.get(i).bytes()))) {
        agreed++;
      }
    }
    // the Java reference is a model of the real thing: it must agree with it
    assertThat(agreed).as("Java reference agrees with Python").isEqualTo(bodies.size());
  }

  // ------------------------------------------------------------ the comparison

  static void check(HostileBodies.Body b, Reading engine) {
    OutputShape shape = new OutputShape();
    byte[] body = b.bytes();
    TokenEstimate e = ESTIMATOR.estimate(b.format(), body, 0, body.length, LIMITS, shape);
    if (shape.invalid() != null) {
      return; // 400 invalid_request: nothing is forwarded
    }
    Reading run = validated(b.format(), engine);
    if (run.refused()) {
      return; // the engine refuses it: nothing runs whatever Sluice read
    }
    String what = b.toString();
    BigInteger cap = cap(b.format(), run);
    int answers = answers(b.format(), run);
    assertThat(e.model()).as("model of %s", what).isEqualTo(run.model());
    assertThat(e.stream()).as("stream of %s", what).isEqualTo(run.stream());
    assertThat(shape.answers()).as("answers of %s", what).isEqualTo(answers);
    assertThat(shape.capSet()).as("cap set in %s", what).isEqualTo(cap != null);
    long one = cap == null ? 512 : cap.min(BigInteger.valueOf(MAX_OUT)).longValueExact();
    assertThat(e.outputReserveTokens()).as("reserve of %s", what).isEqualTo(one * answers);
    assertThat(e.fanOut().tools()).as("tools of %s", what).isEqualTo(tools(b.format(), run));

    // the engine priority rewrite keeps every member as the engine read it
    assertThat(shape.jsonObject()).as("read whole: %s", what).isTrue();
    byte[] out =
        BodyRewrite.apply(
            b.format(),
            body,
            0,
            body.length,
            BodyRewrite.Edits.NONE.withPriority("priority", "-1"));
    assertThat(out).as("rewritten: %s", what).isNotNull();
    Reading after = reference(Objects.requireNonNull(out));
    assertThat(after)
        .as("rewrite of %s", what)
        .isEqualTo(
            new Reading(
                false,
                engine.model(),
                engine.stream(),
                engine.maxTokens(),
                engine.maxCompletionTokens(),
                engine.maxOutputTokens(),
                engine.n(),
                engine.bestOf(),
                engine.tools(),
                engine.functions(),
                -1.0));
  }

  /** The engine's own range checks after pydantic (vLLM: caps and {@code n} at least 1). */
  private static Reading validated(RequestFormat f, Reading r) {
    if (r.refused()) {
      return r;
    }
    for (BigInteger v :
        new BigInteger[] {r.maxTokens(), r.maxCompletionTokens(), r.maxOutputTokens()}) {
      if (v != null && v.signum() <= 0) {
        return Reading.REFUSED;
      }
    }
    for (BigInteger v : new BigInteger[] {r.n(), r.bestOf()}) {
      if (v != null && v.signum() <= 0) {
        return Reading.REFUSED;
      }
    }
    return r;
  }

  /** The cap the engine applies: chat's {@code max_completion_tokens or max_tokens}. */
  private static @Nullable BigInteger cap(RequestFormat f, Reading r) {
    return switch (f) {
      case OPENAI_CHAT -> r.maxCompletionTokens() != null ? r.maxCompletionTokens() : r.maxTokens();
      case OPENAI_RESPONSES -> r.maxOutputTokens();
      default -> r.maxTokens();
    };
  }

  /** Answers generated: {@code n}, and for completions {@code best_of} when larger. */
  private static int answers(RequestFormat f, Reading r) {
    BigInteger n = r.n() == null ? BigInteger.ONE : r.n();
    if (f == RequestFormat.OPENAI_COMPLETIONS && r.bestOf() != null) {
      n = n.max(r.bestOf());
    }
    if (f != RequestFormat.OPENAI_CHAT && f != RequestFormat.OPENAI_COMPLETIONS) {
      return 1;
    }
    return n.min(BigInteger.valueOf(Integer.MAX_VALUE)).intValueExact();
  }

  private static int tools(RequestFormat f, Reading r) {
    int t = r.tools() == null ? 0 : r.tools();
    int fn = r.functions() == null ? 0 : r.functions();
    return switch (f) {
      case OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES -> t + fn;
      default -> 0;
    };
  }

  // ------------------------------------------------------------ the Java reference

  private static final Pattern PY_INT = Pattern.compile("[+-]?[0-9](_?[0-9])*(\\.0+)?");
  private static final Object INVALID = new Object();

  /** Python's json.loads(bytes) then pydantic (lax) on the members, written independently. */
  static Reading reference(byte[] raw) {
    String text = pythonDecode(raw);
    if (text == null || !pythonLiterals(text)) {
      return Reading.REFUSED;
    }
    JsonNode root;
    try {
      root = TREE.readTree(text); // duplicate members: the last value, as Python's dict
    } catch (IOException e) {
      return Reading.REFUSED;
    }
    if (root == null || !root.isObject()) {
      return Reading.REFUSED;
    }
    Object model = str(root.get("model"));
    Object stream = bool(root.get("stream"));
    Object[] ints = {
      integer(root.get("max_tokens")),
      integer(root.get("max_completion_tokens")),
      integer(root.get("max_output_tokens")),
      integer(root.get("n")),
      integer(root.get("best_of"))
    };
    Object tools = list(root.get("tools"));
    Object functions = list(root.get("functions"));
    Object parallel = bool(root.get("parallel_tool_calls"));
    Object priority = number(root.get("priority"));
    for (Object o : new Object[] {model, stream, tools, functions, parallel, priority}) {
      if (o == INVALID) {
        return Reading.REFUSED;
      }
    }
    for (Object o : ints) {
      if (o == INVALID) {
        return Reading.REFUSED;
      }
    }
    return new Reading(
        false,
        (String) model,
        Boolean.TRUE.equals(stream),
        (BigInteger) ints[0],
        (BigInteger) ints[1],
        (BigInteger) ints[2],
        (BigInteger) ints[3],
        (BigInteger) ints[4],
        (Integer) tools,
        (Integer) functions,
        (Double) priority);
  }

  /**
   * Python's detect_encoding and decode: UTF-32/16 by byte order mark or zero bytes, else UTF-8 (a
   * byte order mark dropped) with {@code surrogatepass}; null when the decoding fails.
   */
  private static @Nullable String pythonDecode(byte[] b) {
    int n = b.length;
    int b0 = n > 0 ? b[0] & 0xFF : -1;
    int b1 = n > 1 ? b[1] & 0xFF : -1;
    int b2 = n > 2 ? b[2] & 0xFF : -1;
    int b3 = n > 3 ? b[3] & 0xFF : -1;
    Charset cs = StandardCharsets.UTF_8;
    int skip = 0;
    if ((b0 == 0xFF && b1 == 0xFE && b2 == 0 && b3 == 0)
        || (b0 == 0 && b1 == 0 && b2 == 0xFE && b3 == 0xFF)) {
      cs = Charset.forName(b0 == 0 ? "UTF-32BE" : "UTF-32LE");
      skip = 4;
    } else if ((b0 == 0xFE && b1 == 0xFF) || (b0 == 0xFF && b1 == 0xFE)) {
      cs = b0 == 0xFE ? StandardCharsets.UTF_16BE : StandardCharsets.UTF_16LE;
      skip = 2;
    } else if (b0 == 0xEF && b1 == 0xBB && b2 == 0xBF) {
      skip = 3;
    } else if (n >= 4 && b0 == 0) {
      cs = b1 != 0 ? StandardCharsets.UTF_16BE : Charset.forName("UTF-32BE");
    } else if (n >= 4 && b1 == 0) {
      cs = b2 != 0 || b3 != 0 ? StandardCharsets.UTF_16LE : Charset.forName("UTF-32LE");
    }
    byte[] bytes = java.util.Arrays.copyOfRange(b, skip, n);
    if (cs == StandardCharsets.UTF_8) {
      bytes = surrogatesAsText(bytes);
    }
    CharsetDecoder d =
        cs.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    try {
      return d.decode(java.nio.ByteBuffer.wrap(bytes)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      return null;
    }
  }

  /** surrogatepass: an encoded surrogate (ED A0..BF xx) decodes; it stands as one character. */
  private static byte[] surrogatesAsText(byte[] b) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(b.length);
    for (int i = 0; i < b.length; i++) {
      if ((b[i] & 0xFF) == 0xED
          && i + 2 < b.length
          && (b[i + 1] & 0xFF) >= 0xA0
          && (b[i + 1] & 0xC0) == 0x80
          && (b[i + 2] & 0xC0) == 0x80) {
        out.write('?');
        i += 2;
      } else {
        out.write(b[i]);
      }
    }
    return out.toByteArray();
  }

  /** Python's json spells the non-numbers NaN, Infinity and -Infinity only. */
  private static boolean pythonLiterals(String text) {
    try (JsonParser p = TOKENS.createParser(text)) {
      JsonToken t;
      while ((t = p.nextToken()) != null) {
        if (t == JsonToken.VALUE_NUMBER_FLOAT && p.isNaN()) {
          String s = p.getText();
          if (!s.equals("NaN") && !s.equals("Infinity") && !s.equals("-Infinity")) {
            return false;
          }
        }
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static @Nullable Object str(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    return v.isTextual() ? v.textValue() : INVALID;
  }

  /** pydantic's lax bool. */
  private static @Nullable Object bool(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (v.isBoolean()) {
      return v.booleanValue();
    }
    if (v.isNumber()) {
      double d = v.doubleValue();
      return d == 0 ? Boolean.FALSE : d == 1 ? Boolean.TRUE : INVALID;
    }
    if (v.isTextual()) {
      String s = v.textValue().toLowerCase(java.util.Locale.ROOT);
      if (List.of("1", "on", "t", "true", "y", "yes").contains(s)) {
        return true;
      }
      if (List.of("0", "off", "f", "false", "n", "no").contains(s)) {
        return false;
      }
    }
    return INVALID;
  }

  /** pydantic's lax int: bools, whole floats, digit strings (underscores, .0, whitespace). */
  private static @Nullable Object integer(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (v.isBoolean()) {
      return v.booleanValue() ? BigInteger.ONE : BigInteger.ZERO;
    }
    if (v.isIntegralNumber()) {
      return v.bigIntegerValue();
    }
    if (v.isNumber()) {
      double d = v.doubleValue(); // Python's float
      if (Double.isNaN(d) || Double.isInfinite(d) || d != Math.rint(d)) {
        return INVALID;
      }
      return new BigDecimal(d).toBigIntegerExact();
    }
    if (v.isTextual()) {
      String s = v.textValue().strip().replace("\u00a0", "").strip();
      if (!PY_INT.matcher(s).matches()) {
        return INVALID;
      }
      int dot = s.indexOf('.');
      return new BigInteger((dot < 0 ? s : s.substring(0, dot)).replace("_", ""));
    }
    return INVALID;
  }

  private static @Nullable Object list(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    return v.isArray() ? (Object) v.size() : INVALID;
  }

  private static @Nullable Object number(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (v.isNumber()) {
      return v.doubleValue();
    }
    return INVALID; // the bodies here never spell a priority as a string
  }

  // ------------------------------------------------------------ python3 itself

  /** The readings of python3 + pydantic (engine_reading.py), or null when not available. */
  private static @Nullable List<Reading> python(List<HostileBodies.Body> bodies)
      throws IOException, InterruptedException {
    Path script = Files.createTempFile("engine_reading", ".py");
    try (InputStream in =
        BodyReadingDifferentialTest.class.getResourceAsStream("engine_reading.py")) {
      Files.write(script, Objects.requireNonNull(in).readAllBytes());
    }
    Process proc;
    try {
      proc = new ProcessBuilder("python3", script.toString()).redirectErrorStream(false).start();
    } catch (IOException e) {
      return null;
    }
    List<Reading> out = new ArrayList<>();
    Thread writer =
        new Thread(
            () -> {
              try (OutputStream o = proc.getOutputStream()) {
                for (HostileBodies.Body b : bodies) {
                  o.write(HexFormat.of().formatHex(b.bytes()).getBytes(StandardCharsets.US_ASCII));
                  o.write('\n');
                }
              } catch (IOException ignored) {
                // the process ended early: fewer lines, reported below
              }
            });
    writer.start();
    ObjectMapper json = new ObjectMapper();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        out.add(fromPython(json.readTree(line)));
      }
    }
    writer.join();
    boolean ended = proc.waitFor(60, TimeUnit.SECONDS);
    Files.deleteIfExists(script);
    if (!ended || proc.exitValue() != 0) {
      return null; // no python3, or no pydantic
    }
    assertThat(out).hasSize(bodies.size());
    return out;
  }

  private static Reading fromPython(JsonNode n) {
    if (n.path("refused").asBoolean()) {
      return Reading.REFUSED;
    }
    return new Reading(
        false,
        n.path("model").isNull() ? null : n.path("model").asText(),
        n.path("stream").asBoolean(false),
        big(n.get("max_tokens")),
        big(n.get("max_completion_tokens")),
        big(n.get("max_output_tokens")),
        big(n.get("n")),
        big(n.get("best_of")),
        n.path("tools").isNull() ? null : n.path("tools").asInt(),
        n.path("functions").isNull() ? null : n.path("functions").asInt(),
        n.path("priority").isNull() ? null : pyFloat(n.path("priority").asText()));
  }

  private static Double pyFloat(String s) {
    return switch (s) {
      case "nan" -> Double.NaN;
      case "inf" -> Double.POSITIVE_INFINITY;
      case "-inf" -> Double.NEGATIVE_INFINITY;
      default -> Double.valueOf(s);
    };
  }

  private static @Nullable BigInteger big(@Nullable JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    return v.isTextual() ? new BigInteger(v.asText()) : v.bigIntegerValue();
  }
}
