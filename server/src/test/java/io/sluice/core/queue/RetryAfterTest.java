package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.testing.Seeded;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RetryAfterTest {
  private static final long SEC = 1_000_000_000L;

  @Test
  void seconds_noJitterDraw_ceilsToWholeSeconds() {
    RetryAfter r = new RetryAfter(1, 300, 0.2, () -> 0.5);

    assertThat(r.seconds(0)).isEqualTo(1);
    assertThat(r.seconds(1)).isEqualTo(1);
    assertThat(r.seconds(SEC)).isEqualTo(1);
    assertThat(r.seconds(SEC + 1)).isEqualTo(2);
    assertThat(r.seconds(10 * SEC)).isEqualTo(10);
    assertThat(r.seconds(1000 * SEC)).isEqualTo(300);
  }

  @Test
  void seconds_extremeDraws_spreadTwentyPercent() {
    assertThat(new RetryAfter(1, 300, 0.2, () -> 0.0).seconds(10 * SEC)).isEqualTo(8);
    assertThat(new RetryAfter(1, 300, 0.2, () -> 0.999_999).seconds(10 * SEC)).isEqualTo(12);
    // clamped values are spread below the max too
    assertThat(new RetryAfter(1, 300, 0.2, () -> 0.0).seconds(1000 * SEC)).isEqualTo(240);
  }

  @Test
  void seconds_seededRandom_isDeterministic() {
    RetryAfter a = RetryAfter.withRandom(new SplittableRandom(42));
    RetryAfter b = RetryAfter.withRandom(new SplittableRandom(42));
    for (int i = 0; i < 20; i++) {
      assertThat(a.seconds(30 * SEC)).isEqualTo(b.seconds(30 * SEC));
    }
  }

  @Test
  void constructor_minBelowOne_throws() {
    assertThatThrownBy(() -> new RetryAfter(0, 10, 0.2, () -> 0.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("minSeconds: 0 (expected: >= 1)");
  }

  record Case(long nanos, double u, long min, long extra) {}

  @Test
  void seconds_anyInput_withinClampAndJitter() {
    Seeded.forAll(
        0x5EED_0A01L,
        500,
        g ->
            new Case(
                g.longBetween(-10_000_000_000L, 10_000_000_000_000L),
                g.doubleBetween(0, 1),
                g.longBetween(1, 20),
                g.longBetween(0, 600)),
        c -> {
          RetryAfter r = new RetryAfter(c.min(), c.min() + c.extra(), 0.2, c::u);
          long s = r.seconds(c.nanos());
          long base =
              Math.min(c.min() + c.extra(), Math.max(c.min(), RetryAfter.ceilSeconds(c.nanos())));

          assertThat(s).isBetween(Math.max(1, c.min()), c.min() + c.extra());
          assertThat((double) s).isBetween(Math.min(base * 0.8, c.min()), Math.ceil(base * 1.2));
        });
  }
}
