package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.LongRange;
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

  @Property(tries = 500)
  void seconds_anyInput_withinClampAndJitter(
      @ForAll @LongRange(min = -10_000_000_000L, max = 10_000_000_000_000L) long nanos,
      @ForAll @DoubleRange(min = 0, max = 1, maxIncluded = false) double u,
      @ForAll @LongRange(min = 1, max = 20) long min,
      @ForAll @LongRange(min = 0, max = 600) long extra) {
    RetryAfter r = new RetryAfter(min, min + extra, 0.2, () -> u);
    long s = r.seconds(nanos);
    long base = Math.min(min + extra, Math.max(min, RetryAfter.ceilSeconds(nanos)));

    assertThat(s).isBetween(Math.max(1, min), min + extra);
    assertThat((double) s).isBetween(Math.min(base * 0.8, min), Math.ceil(base * 1.2));
  }
}
