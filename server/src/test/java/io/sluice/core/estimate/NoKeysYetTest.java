package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The learners read nothing while no key was made (a one-shot front end never sees an answer): the
 * prior as before, and the first key, learned or adopted from the shared store, read at once.
 * Seeded: each seed draws its names, ratios and caps.
 */
class NoKeysYetTest {
  private static final LearnedBytesPerToken.Settings BPT =
      new LearnedBytesPerToken.Settings(true, 4.0, 4, 1.5, 16, 64, 60_000);

  /** Before any key: the prior, as a lookup that misses gave it. */
  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 42, 2026})
  void noKey_thePriorsOfBoth(long seed) {
    Random r = new Random(seed);
    LearnedBytesPerToken l = new LearnedBytesPerToken(BPT);
    OutputReserves o = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    for (int i = 0; i < 200; i++) {
      String pool = "p" + r.nextInt(3);
      assertThat(l.bytesPerToken(pool, r.nextBoolean() ? null : "m" + r.nextInt(3))).isEqualTo(4.0);
      long cap = r.nextInt(5000);
      long classDefault = r.nextInt(3) == 0 ? 0 : r.nextInt(2000);
      int answers = 1 + r.nextInt(3);
      long old = cap * answers;
      OutputReserves.Reserve got =
          o.reserve(pool, "m", "chat", "t" + r.nextInt(4), 0.9, cap, classDefault, answers, old);
      assertThat(got).isEqualTo(oldPrior(cap, classDefault, answers, old));
    }
  }

  /** What {@link OutputReserves#reserve} gave with no key: the class default, capped. */
  private static OutputReserves.Reserve oldPrior(
      long cap, long classDefault, int answers, long old) {
    if (cap <= 0) {
      return new OutputReserves.Reserve(old, OutputReserves.RULE_CAP);
    }
    long perAnswer = classDefault > 0 ? classDefault : cap;
    long total = Math.max(1, perAnswer) * answers;
    return perAnswer >= cap || total >= old
        ? new OutputReserves.Reserve(old, OutputReserves.RULE_PRIOR)
        : new OutputReserves.Reserve(total, OutputReserves.RULE_PRIOR);
  }

  /** A learner of {@code ratio} bytes per token, four answers ({@code warmup}) learned at once. */
  private static LearnedBytesPerToken ratioLearned(double ratio) {
    LearnedBytesPerToken l = new LearnedBytesPerToken(BPT);
    for (int i = 0; i < 4; i++) {
      l.learn("gpu", "m", "t", Math.round(6000 * ratio), 6000, 0);
    }
    return l;
  }

  /** A reserve learner of 60 answers of {@code out} tokens each. */
  private static OutputReserves reservesLearned(long out) {
    OutputReserves o = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    for (int i = 0; i < 60; i++) {
      o.record("gpu", "m", "chat", "t", 0.9, 4096, 1, out);
    }
    return o;
  }

  private static String ruleOf(OutputReserves o) {
    return o.reserve("gpu", "m", "chat", "t", 0.9, 4096, 1024, 1, 4096).rule();
  }

  /** The first keys learned are read by the next request. */
  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 42, 2026})
  void learned_readAtOnce(long seed) {
    Random r = new Random(seed);
    double ratio = 2 + r.nextInt(100) / 10.0;
    assertThat(ratioLearned(ratio).bytesPerToken("gpu", "m")).isCloseTo(ratio, offset(1e-9));
    assertThat(ruleOf(reservesLearned(100 + r.nextInt(200))))
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
  }

  /** The first keys adopted from the shared store (a new replica) are read by the next request. */
  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 42, 2026})
  void adopted_readAtOnce(long seed) {
    Random r = new Random(seed);
    LearnedBytesPerToken warm = ratioLearned(2 + r.nextInt(100) / 10.0);
    LearnedBytesPerToken fresh = new LearnedBytesPerToken(BPT);
    warm.takeAdditions().forEach(k -> fresh.adopt(k, 0));
    assertThat(fresh.bytesPerToken("gpu", "m")).isEqualTo(warm.bytesPerToken("gpu", "m"));
    assertThat(fresh.bytesPerToken("gpu", "m")).isNotEqualTo(4.0);

    OutputReserves adopter = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    reservesLearned(100 + r.nextInt(200)).takeAdditions().forEach(adopter::adopt);
    assertThat(ruleOf(adopter)).isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
  }
}
