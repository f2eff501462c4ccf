package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The learned bytes-per-token (docs/estimation.md, "Learned bytes-per-token"): prior until warmed,
 * per pool and model with the pool as fallback, bounded, robust to one tenant's odd bodies, decayed
 * in ticker time. The fake ticker starts near the top of the long range (overflow shows).
 */
class LearnedBytesPerTokenTest {
  private static final LearnedBytesPerToken.Settings S =
      new LearnedBytesPerToken.Settings(true, 4.0, 4, 1.5, 16, 64, 60_000);

  private final FakeTicker ticker = new FakeTicker(Long.MAX_VALUE - 3_600_000_000_000L);

  /** {@code n} answers of {@code tenant}, {@code ratio} bytes per token, a second apart. */
  private void answers(LearnedBytesPerToken l, String model, String tenant, int n, double ratio) {
    for (int i = 0; i < n; i++) {
      ticker.advance(Duration.ofSeconds(1));
      l.learn("gpu", model, tenant, Math.round(6000 * ratio), 6000, ticker.nanos());
    }
  }

  @Test
  void cold_thePrior_untilWarmup_thenTheLearnedRatio() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).isEqualTo(4.0);
    answers(l, "gpt-4o", "a", 3, 6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).as("one answer short").isEqualTo(4.0);
    answers(l, "gpt-4o", "a", 1, 6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).isCloseTo(6.0, within(1e-9));
  }

  @Test
  void anotherModel_thePoolsRatio_andNoModel_thePoolsRatio() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "gpt-4o", "a", 4, 6.0);
    assertThat(l.bytesPerToken("gpu", "llama")).as("model not warmed").isCloseTo(6, within(1e-9));
    assertThat(l.bytesPerToken("gpu", null)).isCloseTo(6, within(1e-9));
    assertThat(l.bytesPerToken("cpu", null)).as("another pool").isEqualTo(4.0);
    answers(l, "llama", "a", 4, 3.0);
    assertThat(l.bytesPerToken("gpu", "llama")).isCloseTo(3, within(1e-9));
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).isCloseTo(6, within(1e-9));
  }

  @Test
  void oddAnswers_clampedToTheBounds() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "m", "a", 4, 500.0);
    assertThat(l.bytesPerToken("gpu", "m")).isCloseTo(16.0, within(1e-9));
    answers(l, "m2", "a", 4, 0.01);
    assertThat(l.bytesPerToken("gpu", "m2")).isCloseTo(1.5, within(1e-9));
  }

  @Test
  void onePoisoner_amongTwoHonestTenants_doesNotMoveTheRatio() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    for (int i = 0; i < 100; i++) { // four times the answers of both others, all odd
      answers(l, "m", "honest-1", 1, 6.0);
      answers(l, "m", "honest-2", 1, 6.2);
      answers(l, "m", "poisoner", 8, 16.0);
    }
    double r = l.bytesPerToken("gpu", "m");
    assertThat(r).as("within the honest tenants' range").isBetween(6.0, 6.2);
    assertThat(l.bytesPerToken("gpu", null)).isBetween(6.0, 6.2);
  }

  @Test
  void oneTenantAlone_isAllTheEvidence_andDecaysAway() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "m", "old", 8, 3.0);
    assertThat(l.bytesPerToken("gpu", "m")).isCloseTo(3, within(1e-9));
    ticker.advance(Duration.ofHours(1)); // 60 half-lives: the old tenant's answers fade out
    answers(l, "m", "new-1", 1, 6.0);
    answers(l, "m", "new-2", 1, 6.0);
    assertThat(l.bytesPerToken("gpu", "m")).isCloseTo(6, within(1e-6));
  }

  @Test
  void aTenantsRatio_followsItsRecentAnswers() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "m", "a", 10, 4.0);
    ticker.advance(Duration.ofMinutes(10)); // ten half-lives
    answers(l, "m", "a", 4, 6.0);
    assertThat(l.bytesPerToken("gpu", "m")).isGreaterThan(5.9).isLessThanOrEqualTo(6.0);
  }

  @Test
  void disabled_alwaysThePrior_andNothingLearned() {
    LearnedBytesPerToken l =
        new LearnedBytesPerToken(
            new LearnedBytesPerToken.Settings(false, 4, 1, 1.5, 16, 8, 60_000));
    assertThat(l.learn("gpu", "m", "a", 6000, 1000, ticker.nanos())).isFalse();
    assertThat(l.bytesPerToken("gpu", "m")).isEqualTo(4.0);
    assertThat(l.keyCount()).isZero();
  }

  @Test
  void zeroCounts_ignored() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    assertThat(l.learn("gpu", "m", "a", 0, 100, ticker.nanos())).isFalse();
    assertThat(l.learn("gpu", "m", "a", 100, 0, ticker.nanos())).isFalse();
    assertThat(l.keyCount()).isZero();
  }

  @Test
  void keys_boundedByMaxKeys_modelNamesAClientChose() {
    LearnedBytesPerToken l =
        new LearnedBytesPerToken(
            new LearnedBytesPerToken.Settings(true, 4, 1, 1.5, 16, 16, 60_000));
    for (int i = 0; i < 1000; i++) {
      l.learn("gpu", "model-" + i + "x".repeat(1000), "a", 6000, 1000, ticker.nanos());
    }
    assertThat(l.keyCount()).isLessThanOrEqualTo(16);
    assertThat(l.evictions()).isGreaterThanOrEqualTo(1000 + 1 - 16);
  }

  @Test
  void tenants_boundedPerKey() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    for (int i = 0; i < 500; i++) {
      l.learn("gpu", "m", "t" + i, 6000, 1000, ticker.nanos());
    }
    assertThat(l.keys())
        .allSatisfy(
            k ->
                assertThat(k.tenants())
                    .isLessThanOrEqualTo(LearnedBytesPerToken.MAX_TENANTS_PER_KEY));
    assertThat(l.bytesPerToken("gpu", "m")).isCloseTo(6, within(1e-9));
  }

  @Test
  void reconfigure_keepsWhatWasLearned_andANewPrior() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "m", "a", 4, 6.0);
    l.reconfigure(S.withPrior(5));
    assertThat(l.bytesPerToken("gpu", "m")).isCloseTo(6, within(1e-9));
    assertThat(l.bytesPerToken("cpu", "m")).isEqualTo(5.0);
  }

  @Test
  void badSettings_namedWithTheirPath() {
    assertThatThrownBy(() -> new LearnedBytesPerToken.Settings(true, 4, 0, 1.5, 16, 8, 60_000))
        .hasMessageContaining("nativeMetadata.learnedBytesPerToken.warmup: 0");
    assertThatThrownBy(() -> new LearnedBytesPerToken.Settings(true, 4, 1, 8, 2, 8, 60_000))
        .hasMessageContaining("min/max");
  }

  @Test
  void estimator_dividesTheContentLengthByTheLearnedRatio_andKeepsTheLength() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    TokenEstimator e =
        new TokenEstimator(EstimatorSettings.builder().build(), TokenCountCache.disabled(), l);
    EstimateLimits limits = new EstimateLimits(512, 4096);
    assertThat(e.fromContentLength(6000, "gpu", "m", limits).inputTokens()).isEqualTo(1500);
    answers(l, "m", "a", 4, 6.0);
    TokenEstimate t = e.fromContentLength(6000, "gpu", "m", limits);
    assertThat(t.inputTokens()).isEqualTo(1000);
    assertThat(t.contentLengthBytes()).isEqualTo(6000);
    assertThat(t.withOutputReserve(7).contentLengthBytes()).isEqualTo(6000);
    assertThat(
            NativeEstimate.atHeaders(t, new NativeRequestInfo("m", false, 100, 2, -1), limits)
                .contentLengthBytes())
        .isEqualTo(6000);
  }
}
