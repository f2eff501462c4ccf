package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A chat body the plain read tallies ({@link ChatScan}) is finished without a {@link
 * RequestBodyReader} ({@link ScanWalk#finish}): its estimate counts the prompt's text, each
 * message's overhead and the reply priming exactly as the Jackson read's does, and a body without a
 * prompt falls back as before.
 */
class ReaderlessFinishTest {
  private static final EstimatorSettings SETTINGS = EstimatorSettings.defaults();
  private static final TokenEstimator PLAIN = TokenEstimator.uncached(SETTINGS);
  private static final TokenEstimator JACKSON = PLAIN.plainReads(false);
  private static final EstimateLimits LIMITS = new EstimateLimits(512, 4096);

  @Test
  void aPlainChatBodyCountsTextMessagesAndPriming() {
    String text = "Summarise the notes in three bullet points, then list the action items.";
    byte[] body =
        ("{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":256,\"messages\":["
                + "{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\""
                + text
                + "\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    for (RequestFormat f : new RequestFormat[] {RequestFormat.OPENAI_CHAT}) {
      TokenEstimate plain = PLAIN.estimate(f, body, LIMITS);
      long textBytes = "system".length() + "Be brief.".length() + "user".length() + text.length();
      long expected =
          TokenTally.ceil(textBytes / SETTINGS.bytesPerToken())
              + 2 * SETTINGS.perMessageOverheadTokens()
              + SETTINGS.replyPrimingTokens();
      assertThat(plain.fallbackCause()).isNull();
      assertThat(plain.inputTokens())
          .as("text, two messages and the reply priming")
          .isEqualTo(expected);
      assertThat(plain).isEqualTo(JACKSON.estimate(f, body, LIMITS));
    }
  }

  @Test
  void everyShapeEstimatesAsTheJacksonRead() {
    String[] bodies = {
      "{\"model\":\"m\",\"messages\":[]}",
      "{\"model\":\"m\",\"messages\":null}",
      "{\"model\":\"m\",\"max_tokens\":9}",
      "{\"model\":\"m\",\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
      "{\"model\":\"m\",\"system\":\"only the system\"}",
      "{\"model\":\"m\",\"tools\":[{\"type\":\"function\"}],\"messages\":[{\"content\":\"x\"}]}",
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"n\":3}"
    };
    for (String s : bodies) {
      byte[] body = s.getBytes(StandardCharsets.UTF_8);
      for (RequestFormat f :
          new RequestFormat[] {RequestFormat.OPENAI_CHAT, RequestFormat.ANTHROPIC_MESSAGES}) {
        assertThat(PLAIN.estimate(f, body, LIMITS))
            .as("%s as %s", s, f)
            .isEqualTo(JACKSON.estimate(f, body, LIMITS));
      }
    }
  }

  @Test
  void withoutAPromptNothingIsPrimed() {
    TokenTally tally =
        new TokenTally(null, TokenCountCache.disabled(), SETTINGS.bytesPerToken(), 1000);
    assertThat(ScanWalk.finish(SETTINGS, RequestFormat.OPENAI_CHAT, false, tally)).isFalse();
    assertThat(tally.tokens()).isZero();
    assertThat(ScanWalk.finish(SETTINGS, RequestFormat.OPENAI_COMPLETIONS, true, tally)).isTrue();
    assertThat(tally.tokens()).as("completions: no reply priming").isZero();
    assertThat(ScanWalk.finish(SETTINGS, RequestFormat.ANTHROPIC_MESSAGES, true, tally)).isTrue();
    assertThat(tally.tokens()).isEqualTo(SETTINGS.replyPrimingTokens());
  }
}
