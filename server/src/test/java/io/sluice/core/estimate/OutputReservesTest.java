package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class OutputReservesTest {
  private static final double Z95 = 1.6448536; // standard normal 0.95 quantile
  private static final long CAP = 4096;
  private static final long DEFAULT = 1024; // the class's defaultOutputTokens

  static LongStream seeds() {
    return LongStream.range(1, 9);
  }

  private static OutputReserves learner(int warmup, int halfLife) {
    return new OutputReserves(settings(warmup, halfLife, 1000, true));
  }

  private static OutputReserves.Settings settings(
      int warmup, int halfLife, int maxKeys, boolean tenantKeys) {
    return OutputReserves.Settings.builder()
        .warmup(warmup)
        .halfLife(halfLife)
        .maxKeys(maxKeys)
        .tenantKeys(tenantKeys)
        .build();
  }

  private static long lognormal(SplittableRandom r, double median, double sigma) {
    return Math.round(median * Math.exp(sigma * gaussian(r)));
  }

  private static double gaussian(SplittableRandom r) { // Box-Muller
    double u = 1 - r.nextDouble();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r.nextDouble());
  }

  private static void record(OutputReserves l, String tenant, long cap, int answers, long out) {
    l.record("gpu", "m1", "chat", tenant, 0.95, cap, answers, out);
  }

  /** The key's learned quantile itself (the reserve is a bound above it). */
  private static double learnedQuantile(OutputReserves l, String tenant) {
    return l.top(1000).stream()
        .filter(k -> k.tenant().equals(tenant))
        .findFirst()
        .orElseThrow()
        .absolute();
  }

  private static OutputReserves.Reserve reserve(OutputReserves l, String tenant, long cap) {
    return l.reserve("gpu", "m1", "chat", tenant, 0.95, cap, DEFAULT, 1, cap);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void learned_lognormalAround200_cap4096_within10PercentOfTheTrueQuantile(long seed) {
    OutputReserves l = learner(100, 1000);
    SplittableRandom r = new SplittableRandom(seed);
    double truth = 200 * Math.exp(0.6 * Z95); // 537

    for (int i = 0; i < 5000; i++) {
      record(l, "t", CAP, 1, lognormal(r, 200, 0.6));
    }

    OutputReserves.Reserve got = reserve(l, "t", CAP);
    assertThat(got.rule()).isEqualTo(OutputReserves.RULE_LEARNED);
    assertThat((double) got.outputTokens()).isBetween(truth * 0.9, truth * 1.1);
  }

  @Test
  void warmup_beforeNAnswers_thePrior_classDefaultNeverAboveTheCap() {
    OutputReserves l = learner(100, 200);
    for (int i = 0; i < 99; i++) {
      record(l, "t", CAP, 1, 200);
    }
    assertThat(reserve(l, "t", CAP)).isEqualTo(new OutputReserves.Reserve(DEFAULT, "prior"));
    assertThat(reserve(l, "t", 300)).isEqualTo(new OutputReserves.Reserve(300, "prior"));
    // no cap in the request: the old rule is the class default
    assertThat(l.reserve("gpu", "m1", "chat", "t", 0.95, DEFAULT, DEFAULT, 1, DEFAULT))
        .isEqualTo(new OutputReserves.Reserve(DEFAULT, "prior"));

    record(l, "t", CAP, 1, 200); // the 100th

    OutputReserves.Reserve warmed = reserve(l, "t", CAP);
    assertThat(warmed.rule()).isEqualTo("learned");
    assertThat(warmed.outputTokens()).isBetween(200L, 221L); // one 10 % bucket
    // no cap in the request: min(class default, learned)
    assertThat(
            l.reserve("gpu", "m1", "chat", "t", 0.95, DEFAULT, DEFAULT, 1, DEFAULT).outputTokens())
        .isEqualTo(warmed.outputTokens());
    // a cap below the learned value wins
    assertThat(reserve(l, "t", 150)).isEqualTo(new OutputReserves.Reserve(150, "cap"));
  }

  /**
   * The stated figure (docs/estimation.md): after 6 half-lives of completions the old traffic
   * weighs 2^-6 < 1.6 %, and the learned quantile is the new traffic's. A 4x shift, both ways. (The
   * reserve, a bound above the quantile, follows it.)
   */
  @ParameterizedTest
  @MethodSource("seeds")
  void shift_learnedWithinSixHalfLives_upAndDown(long seed) {
    int halfLife = 200;
    OutputReserves l = learner(50, halfLife);
    SplittableRandom r = new SplittableRandom(seed);
    double sigma = 0.3;
    for (int i = 0; i < 3000; i++) {
      record(l, "t", CAP, 1, lognormal(r, 200, sigma));
    }
    double low = 200 * Math.exp(sigma * Z95);
    double high = 800 * Math.exp(sigma * Z95);
    assertThat(learnedQuantile(l, "t")).isBetween(low * 0.9, low * 1.1);

    for (int i = 0; i < 6 * halfLife; i++) {
      record(l, "t", CAP, 1, lognormal(r, 800, sigma));
    }
    assertThat(learnedQuantile(l, "t")).isBetween(high * 0.9, high * 1.1);

    for (int i = 0; i < 6 * halfLife; i++) {
      record(l, "t", CAP, 1, lognormal(r, 200, sigma));
    }
    assertThat(learnedQuantile(l, "t")).isBetween(low * 0.9, low * 1.1);
  }

  @Test
  void shift_withoutDecay_wouldStillBeTheOldTraffic() {
    // the same downward shift with a half-life far longer than the traffic: the old answers still
    // dominate after 6 x 200 completions, so the figure above is the decay's doing
    OutputReserves l = learner(50, 10_000_000);
    SplittableRandom r = new SplittableRandom(7);
    for (int i = 0; i < 3000; i++) {
      record(l, "t", CAP, 1, lognormal(r, 800, 0.3));
    }
    for (int i = 0; i < 1200; i++) {
      record(l, "t", CAP, 1, lognormal(r, 200, 0.3));
    }
    assertThat(reserve(l, "t", CAP).outputTokens()).isGreaterThan(800);
  }

  /** Whatever was learned, the reserve never exceeds the client's cap times its answers. */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_reserveNeverAboveTheRequestedCap(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    OutputReserves l =
        new OutputReserves(
            settings(1 + r.nextInt(20), 1 + r.nextInt(300), 1000, r.nextBoolean()).toBuilder()
                .confidence(0.5 + 0.49 * r.nextDouble())
                .poolPrior(r.nextBoolean())
                .build());
    for (int i = 0; i < 4000; i++) {
      long cap = 1 + r.nextLong(r.nextBoolean() ? 64 : 16_384);
      int answers = 1 + r.nextInt(r.nextInt(10) == 0 ? 128 : 2);
      long classDefault = r.nextLong(4096);
      String tenant = "t" + r.nextInt(3);
      String model = "m" + r.nextInt(2);
      long old = cap * answers;
      OutputReserves.Reserve got =
          l.reserve("gpu", model, "chat", tenant, 0.95, cap, classDefault, answers, old);
      assertThat(got.outputTokens()).as("try %d", i).isBetween(1L, old);
      assertThat(got.rule()).isIn(OutputReserves.RULES);
      if (got.rule().equals(OutputReserves.RULE_CAP)) {
        assertThat(got.outputTokens()).isEqualTo(old);
      }
      // answers that overshoot the cap (an upstream that ignores it) or are 0 are learned too,
      // and answers cut short
      long out = r.nextInt(5) == 0 ? r.nextLong(100_000) : r.nextLong(cap * answers + 1);
      if (r.nextInt(4) == 0) {
        l.recordCut("gpu", model, "chat", tenant, 0.95, cap, answers, out);
      } else {
        l.record("gpu", model, "chat", tenant, 0.95, cap, answers, out);
      }
    }
  }

  @Test
  void memory_floodOfDistinctModelsAndTenants_keysBoundedColdestEvicted() {
    OutputReserves l = new OutputReserves(settings(10, 200, 64, true));
    for (int i = 0; i < 20; i++) { // a hot key
      record(l, "hot", CAP, 1, 300);
      reserve(l, "hot", CAP);
    }
    for (int i = 0; i < 5000; i++) {
      l.record("gpu", "model-" + i + "x".repeat(1000), "chat", "tenant-" + i, 0.95, CAP, 1, 100);
      if (i % 100 == 0) { // the hot key keeps being used
        record(l, "hot", CAP, 1, 300);
        reserve(l, "hot", CAP);
      }
    }
    assertThat(l.keyCount()).isLessThanOrEqualTo(64);
    assertThat(l.evictions()).isGreaterThanOrEqualTo(10_000 - 64);
    assertThat(reserve(l, "hot", CAP).rule()).isEqualTo("learned");
    assertThat(l.top(1000))
        .allSatisfy(k -> assertThat(k.model().length()).isLessThanOrEqualTo(128));
  }

  @Test
  void tenantKey_startsFromTheCoarseKeyUntilWarmed() {
    OutputReserves l = learner(50, 200);
    for (int i = 0; i < 200; i++) {
      record(l, "big", CAP, 1, 1000);
      record(l, "other", CAP, 1, 1000);
    }
    for (int i = 0; i < 49; i++) {
      record(l, "small", CAP, 1, 100);
    }
    // small's own key has 49 < 50 answers: the coarse key (big's and other's 1000s) is its prior
    OutputReserves.Reserve prior = reserve(l, "small", CAP);
    assertThat(prior.rule()).isEqualTo("prior");
    assertThat(prior.outputTokens()).isBetween(1000L, 1110L);

    record(l, "small", CAP, 1, 100);

    assertThat(reserve(l, "small", CAP).outputTokens()).isBetween(100L, 111L);
    assertThat(reserve(l, "big", CAP).outputTokens()).isBetween(1000L, 1110L);
    assertThat(reserve(l, "stranger", CAP)).isEqualTo(prior);
  }

  @Test
  void poolPriorOff_aKeyNotWarmedStartsFromTheClassDefault() {
    OutputReserves l =
        new OutputReserves(settings(5, 200, 100, true).toBuilder().poolPrior(false).build());
    for (int i = 0; i < 100; i++) {
      record(l, "a", CAP, 1, 200);
      record(l, "b", CAP, 1, 200);
    }
    assertThat(reserve(l, "c", CAP)).isEqualTo(new OutputReserves.Reserve(DEFAULT, "prior"));
  }

  @Test
  void tenantKeysOff_onlyTheCoarseKey() {
    OutputReserves l = new OutputReserves(settings(50, 200, 100, false));
    for (int i = 0; i < 200; i++) {
      record(l, "big", CAP, 1, 1000);
      record(l, "small", CAP, 1, 100);
    }
    assertThat(l.keyCount()).isEqualTo(1);
    assertThat(reserve(l, "small", CAP).outputTokens())
        .isEqualTo(reserve(l, "big", CAP).outputTokens());
  }

  @Test
  void relative_answersProportionalToTheCap_relativeFormChosenAndFollowsTheCap() {
    OutputReserves l = learner(50, 200);
    SplittableRandom r = new SplittableRandom(3);
    for (int i = 0; i < 2000; i++) {
      long cap = 100 + r.nextLong(4000);
      record(l, "t", cap, 1, cap / 10); // e.g. a summarizer asked for a tenth
    }
    assertThat(l.top(10).get(0).form()).isEqualTo("relative");
    assertThat(reserve(l, "t", 3000).outputTokens()).isBetween(300L, 345L);
    assertThat(reserve(l, "t", 500).outputTokens()).isBetween(50L, 58L);
  }

  @Test
  void absolute_answersIndependentOfTheCap_absoluteFormChosen() {
    OutputReserves l = learner(50, 200);
    SplittableRandom r = new SplittableRandom(4);
    for (int i = 0; i < 2000; i++) {
      long cap = 1000 + r.nextLong(7000);
      record(l, "t", cap, 1, 180 + r.nextInt(40));
    }
    assertThat(l.top(10).get(0).form()).isEqualTo("absolute");
    assertThat(reserve(l, "t", 8000).outputTokens()).isBetween(200L, 245L);
    assertThat(reserve(l, "t", 1000).outputTokens()).isBetween(200L, 245L);
  }

  @Test
  void answers_learnedPerAnswer_reserveMultipliedByTheAnswers() {
    OutputReserves l = learner(10, 200);
    for (int i = 0; i < 50; i++) {
      record(l, "t", 1000, 3, 600); // three answers of 200
    }
    OutputReserves.Reserve got = l.reserve("gpu", "m1", "chat", "t", 0.95, 1000, DEFAULT, 4, 4000);
    assertThat(got.rule()).isEqualTo("learned");
    assertThat(got.outputTokens()).isBetween(4 * 200L, 4 * 221L);
  }

  @Test
  void keys_perPoolModelScopeAndQuantile() {
    OutputReserves l = learner(10, 200);
    for (int i = 0; i < 20; i++) {
      record(l, "t", CAP, 1, 100);
    }
    assertThat(l.reserve("gpu", "m2", "chat", "t", 0.95, CAP, DEFAULT, 1, CAP).rule())
        .isEqualTo("prior");
    assertThat(l.reserve("cpu", "m1", "chat", "t", 0.95, CAP, DEFAULT, 1, CAP).rule())
        .isEqualTo("prior");
    assertThat(l.reserve("gpu", "m1", "embed", "t", 0.95, CAP, DEFAULT, 1, CAP).rule())
        .isEqualTo("prior");
    assertThat(l.reserve("gpu", "m1", "chat", "t", 0.99, CAP, DEFAULT, 1, CAP).rule())
        .isEqualTo("prior");
  }

  @Test
  void disabled_theOldRule_ruleOff_nothingLearned() {
    OutputReserves l =
        new OutputReserves(settings(1, 200, 100, true).toBuilder().enabled(false).build());
    for (int i = 0; i < 20; i++) {
      record(l, "t", CAP, 1, 100);
    }
    assertThat(reserve(l, "t", CAP)).isEqualTo(new OutputReserves.Reserve(CAP, "off"));
    assertThat(l.keyCount()).isZero();
  }

  @Test
  void reconfigure_keepsTheLearnedKeys_shrinksToMaxKeys() {
    OutputReserves l = learner(10, 200);
    for (int i = 0; i < 20; i++) {
      record(l, "t", CAP, 1, 100);
      l.record("gpu", "other" + i, "chat", "u", 0.95, CAP, 1, 100);
    }
    long before = reserve(l, "t", CAP).outputTokens();

    l.reconfigure(settings(10, 100, 100, true));

    assertThat(l.keyCount()).isEqualTo(42);
    assertThat(reserve(l, "t", CAP)).isEqualTo(new OutputReserves.Reserve(before, "learned"));

    l.reconfigure(settings(10, 100, 5, true));

    assertThat(l.keyCount()).isLessThanOrEqualTo(5);
  }

  @Test
  void settings_badValues_nameTheField() {
    assertThatThrownBy(() -> settings(0, 1, 1, true))
        .hasMessage("estimation.learnedReserve.warmup: 0 (expected: >= 1)");
    assertThatThrownBy(() -> settings(1, 0, 1, true))
        .hasMessage("estimation.learnedReserve.halfLife: 0 (expected: >= 1)");
    assertThatThrownBy(() -> settings(1, 1, 0, true))
        .hasMessage("estimation.learnedReserve.maxKeys: 0 (expected: >= 1)");
    assertThatThrownBy(() -> OutputReserves.Settings.builder().confidence(1).build())
        .hasMessage("estimation.learnedReserve.confidence: 1.0 (expected: 0.5 <= value <= 0.999)");
    assertThatThrownBy(
            () ->
                OutputReserves.Settings.builder()
                    .shareIntervalMillis(10_000)
                    .shareWindowMillis(5_000)
                    .build())
        .hasMessage(
            "estimation.learnedReserve.shareWindow: 5000ms (expected: >= shareInterval, 10000ms)");
  }
}
