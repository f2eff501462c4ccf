package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * Coverage-guided: the body rewrite of the degrade ladder and the engine priority on any request
 * body (a client's bytes). The first byte picks the format and the edits. For every body: no
 * exception; the input never modified; the result null or a JSON object in which every output cap
 * member is at most the cap asked for, the model and priority are what was asked for, and the
 * members the rewrite does not touch are as they were; the same result for the body inside a larger
 * array (read in place). Seeds: {@code BodyRewriteFuzzTestInputs/rewrite/}.
 */
class BodyRewriteFuzzTest {
  // reads NaN and Infinity, as the rewrite does (Python's json reads them)
  private static final ObjectMapper JSON =
      com.fasterxml.jackson.databind.json.JsonMapper.builder()
          .enable(com.fasterxml.jackson.core.json.JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
          .build();
  private static final RequestFormat[] FORMATS = RequestFormat.values();
  private static final List<String> CAPS =
      List.of("max_tokens", "max_completion_tokens", "max_output_tokens");
  private static final List<String> TOUCHED =
      List.of(
          "max_tokens",
          "max_completion_tokens",
          "max_output_tokens",
          "messages",
          "system",
          "instructions",
          "model",
          "priority");

  @FuzzTest(maxDuration = "2m")
  void rewrite(byte[] input) throws IOException {
    if (input.length == 0) {
      return;
    }
    int selector = input[0] & 0xff;
    RequestFormat format = FORMATS[(selector & 7) % FORMATS.length];
    long cap = (selector & 8) == 0 ? 50 : -1;
    BodyRewrite.Edits edits =
        BodyRewrite.Edits.NONE
            .withCap(
                cap,
                (selector & 16) == 0 ? null : "max_completion_tokens",
                (selector & 32) == 0 ? null : "Be brief.")
            .withModel((selector & 64) == 0 ? null : "small")
            .withPriority("priority", (selector & 128) == 0 ? "0.5" : "-3");
    byte[] body = Arrays.copyOfRange(input, 1, input.length);
    byte[] copy = body.clone();

    byte[] out = BodyRewrite.apply(format, body, 0, body.length, edits);
    assertThat(body).as("the rewrite never modifies the body").isEqualTo(copy);
    byte[] framed = new byte[body.length + 4];
    Arrays.fill(framed, (byte) '{');
    System.arraycopy(body, 0, framed, 2, body.length);
    byte[] inPlace = BodyRewrite.apply(format, framed, 2, body.length, edits);
    assertThat(inPlace).as("read in place").isEqualTo(out);
    if (out == null) {
      return;
    }
    JsonNode o = JSON.readTree(out);
    assertThat(o.isObject()).isTrue();
    if (cap >= 0) {
      boolean any = false;
      for (String f : CAPS) {
        if (o.hasNonNull(f)) {
          any = true;
          assertThat(o.get(f).isIntegralNumber()).as(f).isTrue();
          assertThat(o.get(f).asLong()).as(f).isBetween(0L, cap);
        }
      }
      assertThat(any).as("a cap is in the body").isTrue();
    }
    if (edits.model() != null) {
      assertThat(o.path("model").asText()).isEqualTo("small");
    }
    assertThat(o.path("priority").decimalValue()).isEqualByComparingTo(edits.priorityValue());
    JsonNode before = JSON.readTree(body);
    before
        .fieldNames()
        .forEachRemaining(
            name -> {
              if (!TOUCHED.contains(name)) {
                assertThat(o.get(name)).as(name).isEqualTo(before.get(name));
              }
            });
  }
}
