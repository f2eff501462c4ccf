package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class TokenEstimatorPropertiesTest {
  private static final TokenEstimator ESTIMATOR = new TokenEstimator(EstimatorSettings.defaults());
  private static final String[] FIXTURES = {
    "openai-chat-simple.json",
    "openai-chat-parts.json",
    "openai-chat-tools.json",
    "openai-completions.json",
    "openai-responses.json",
    "openai-embeddings.json",
    "anthropic-messages.json",
  };

  @Property(tries = 300)
  void estimate_arbitraryBytes_neverThrowsAndStaysInBounds(
      @ForAll @Size(max = 512) byte[] body,
      @ForAll RequestFormat format,
      @ForAll @IntRange(max = 10_000) int defaultOutput,
      @ForAll @IntRange(max = 10_000) int extra) {
    EstimateLimits limits = new EstimateLimits(defaultOutput, (long) defaultOutput + extra);

    TokenEstimate e = ESTIMATOR.estimate(format, body, limits);

    assertThat(e.inputTokens()).isNotNegative();
    assertThat(e.outputReserveTokens()).isBetween(0L, limits.maxOutputTokens());
  }

  @Property(tries = 300)
  void estimate_mutatedFixture_neverThrowsAndStaysInBounds(
      @ForAll("fixtureIndex") int fixture,
      @ForAll @IntRange(max = 100_000) int position,
      @ForAll byte replacement,
      @ForAll @IntRange(max = 100_000) int cut,
      @ForAll RequestFormat format) {
    byte[] body = Fixtures.bytes(FIXTURES[fixture]);
    body[position % body.length] = replacement;
    int length = cut % (body.length + 1);
    EstimateLimits limits = new EstimateLimits(100, 1000);

    TokenEstimate e = ESTIMATOR.estimate(format, body, 0, length, limits);

    assertThat(e.inputTokens()).isNotNegative();
    assertThat(e.outputReserveTokens()).isBetween(0L, 1000L);
    if (e.fallbackCause() != null) {
      assertThat(e.inputTokens()).isEqualTo((long) Math.ceil(length / 4.0));
    }
  }

  @Property(tries = 200)
  void estimate_maxTokensValue_reserveWithinLimits(
      @ForAll long maxTokens, @ForAll @IntRange(max = 5000) int max) {
    EstimateLimits limits = new EstimateLimits(Math.min(256, max), max);
    byte[] body =
        Fixtures.utf8(
            "{\"max_tokens\":"
                + maxTokens
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");

    TokenEstimate e = ESTIMATOR.estimate(RequestFormat.OPENAI_CHAT, body, limits);

    assertThat(e.outputReserveTokens()).isBetween(0L, (long) max);
    assertThat(e.outputClamped()).isEqualTo(maxTokens <= 0 || maxTokens > max);
  }

  @Provide
  Arbitrary<Integer> fixtureIndex() {
    return Arbitraries.integers().between(0, FIXTURES.length - 1);
  }
}
