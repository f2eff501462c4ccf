package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.Arrays;

/**
 * Coverage-guided: the token estimator on any request body. The input's first byte picks the format
 * and the output limits, the rest is the body. For every body: no exception; no {@code
 * internal_error} fallback (that would be a RuntimeException swallowed inside the estimator); input
 * tokens non-negative; the output reserve within the class's limits; the body never modified; the
 * same estimate when the body lies inside a larger array (read in place: nothing outside the range
 * counts); and the same estimate with and without the shared token-count cache, twice (a cached
 * count equals a fresh one). Seeds: {@code TokenEstimatorFuzzTestInputs/estimate/}.
 */
class TokenEstimatorFuzzTest {
  private static final TokenEstimator FRESH = TokenEstimator.uncached(EstimatorSettings.defaults());
  private static final TokenEstimator CACHED =
      new TokenEstimator(EstimatorSettings.defaults(), new TokenCountCache(1 << 20, 1), null);
  private static final RequestFormat[] FORMATS = RequestFormat.values();

  @FuzzTest(maxDuration = "2m")
  void estimate(byte[] input) {
    if (input.length == 0) {
      return;
    }
    int selector = input[0] & 0xff;
    RequestFormat format = FORMATS[(selector & 7) % FORMATS.length];
    EstimateLimits limits =
        (selector & 8) == 0 ? new EstimateLimits(100, 4096) : new EstimateLimits(0, 0);
    byte[] body = Arrays.copyOfRange(input, 1, input.length);
    byte[] copy = body.clone();

    TokenEstimate e = FRESH.estimate(format, body, limits);
    assertThat(body).as("the estimator never modifies the body").isEqualTo(copy);
    assertThat(e.fallbackCause())
        .as("a RuntimeException inside the estimator")
        .isNotEqualTo(FallbackCause.INTERNAL_ERROR);
    assertThat(e.inputTokens()).isNotNegative();
    assertThat(e.outputReserveTokens()).isBetween(0L, limits.maxOutputTokens());
    if (e.fallbackCause() != null) {
      assertThat(e.method()).isEqualTo(TokenEstimate.METHOD_BYTES);
    }

    // in place: the same body between two kinds of garbage reads the same
    byte[] framed = new byte[body.length + 7];
    Arrays.fill(framed, (byte) '"');
    framed[0] = '{';
    framed[framed.length - 1] = (byte) 0xff;
    System.arraycopy(body, 0, framed, 3, body.length);
    assertThat(FRESH.estimate(format, framed, 3, body.length, limits)).isEqualTo(e);

    // the token-count cache: a miss, then a hit, each equal to the uncached count
    assertThat(CACHED.estimate(format, body, limits)).isEqualTo(e);
    assertThat(CACHED.estimate(format, body, limits)).isEqualTo(e);
  }
}
