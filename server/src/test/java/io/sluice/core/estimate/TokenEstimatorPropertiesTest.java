package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testing.Seeded;
import org.junit.jupiter.api.Test;

class TokenEstimatorPropertiesTest {
  private static final TokenEstimator ESTIMATOR =
      TokenEstimator.uncached(EstimatorSettings.defaults());
  private static final String[] FIXTURES = {
    "openai-chat-simple.json",
    "openai-chat-parts.json",
    "openai-chat-tools.json",
    "openai-completions.json",
    "openai-responses.json",
    "openai-embeddings.json",
    "anthropic-messages.json",
  };

  record Bytes(byte[] body, RequestFormat format, int defaultOutput, int extra) {
    @Override
    public String toString() {
      return "Bytes[body="
          + Seeded.describe(body)
          + ", format="
          + format
          + ", defaultOutput="
          + defaultOutput
          + ", extra="
          + extra
          + "]";
    }
  }

  @Test
  void estimate_arbitraryBytes_neverThrowsAndStaysInBounds() {
    Seeded.forAll(
        0x5EED_1001L,
        300,
        g ->
            new Bytes(
                g.bytes(512),
                g.anyOf(RequestFormat.class),
                g.intBetween(0, 10_000),
                g.intBetween(0, 10_000)),
        c -> {
          EstimateLimits limits =
              new EstimateLimits(c.defaultOutput(), (long) c.defaultOutput() + c.extra());

          TokenEstimate e = ESTIMATOR.estimate(c.format(), c.body(), limits);

          assertThat(e.inputTokens()).isNotNegative();
          assertThat(e.outputReserveTokens()).isBetween(0L, limits.maxOutputTokens());
        });
  }

  record Mutation(int fixture, int position, byte replacement, int cut, RequestFormat format) {}

  @Test
  void estimate_mutatedFixture_neverThrowsAndStaysInBounds() {
    Seeded.forAll(
        0x5EED_1002L,
        300,
        g ->
            new Mutation(
                g.intBetween(0, FIXTURES.length - 1),
                g.intBetween(0, 100_000),
                g.anyByte(),
                g.intBetween(0, 100_000),
                g.anyOf(RequestFormat.class)),
        c -> {
          byte[] body = Fixtures.bytes(FIXTURES[c.fixture()]);
          body[c.position() % body.length] = c.replacement();
          int length = c.cut() % (body.length + 1);
          EstimateLimits limits = new EstimateLimits(100, 1000);

          TokenEstimate e = ESTIMATOR.estimate(c.format(), body, 0, length, limits);

          assertThat(e.inputTokens()).isNotNegative();
          assertThat(e.outputReserveTokens()).isBetween(0L, 1000L);
          if (e.fallbackCause() != null) {
            assertThat(e.inputTokens()).isEqualTo((long) Math.ceil(length / 4.0));
          }
        });
  }

  record MaxTokens(long maxTokens, int max) {}

  @Test
  void estimate_maxTokensValue_reserveWithinLimits() {
    Seeded.forAll(
        0x5EED_1003L,
        200,
        g -> new MaxTokens(g.anyLong(), g.intBetween(0, 5000)),
        c -> {
          long maxTokens = c.maxTokens();
          int max = c.max();
          EstimateLimits limits = new EstimateLimits(Math.min(256, max), max);
          byte[] body =
              Fixtures.utf8(
                  "{\"max_tokens\":"
                      + maxTokens
                      + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");

          TokenEstimate e = ESTIMATOR.estimate(RequestFormat.OPENAI_CHAT, body, limits);

          assertThat(e.outputReserveTokens()).isBetween(0L, (long) max);
          assertThat(e.outputClamped()).isEqualTo(maxTokens <= 0 || maxTokens > max);
        });
  }
}
