package io.sluice.core.estimate;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.Arrays;

/**
 * Coverage-guided: {@link BodyReadingDifferentialTest}'s comparison on any bytes. The first byte
 * picks the format (chat, completions, Responses, Anthropic), the rest is the body. For every body:
 * Sluice refuses it {@code invalid_request}, or the engine's reading (Python's {@code json} and
 * pydantic in lax mode, modelled in Java) refuses it, or Sluice reads the engine's model, stream,
 * cap, answers and tool count and a priority rewrite keeps them. Seeds: {@code
 * BodyReadingFuzzTestInputs/bodyReadAsTheEngineReadsIt/} (docs/testing.md).
 */
class BodyReadingFuzzTest {
  private static final RequestFormat[] FORMATS = {
    RequestFormat.OPENAI_CHAT,
    RequestFormat.OPENAI_COMPLETIONS,
    RequestFormat.OPENAI_RESPONSES,
    RequestFormat.ANTHROPIC_MESSAGES
  };

  @FuzzTest(maxDuration = "2m")
  void bodyReadAsTheEngineReadsIt(byte[] input) {
    if (input.length == 0) {
      return;
    }
    RequestFormat format = FORMATS[(input[0] & 0xff) % FORMATS.length];
    byte[] body = Arrays.copyOfRange(input, 1, input.length);
    HostileBodies.Body b = new HostileBodies.Body(format, body);
    BodyReadingDifferentialTest.check(b, BodyReadingDifferentialTest.reference(body));
  }
}
