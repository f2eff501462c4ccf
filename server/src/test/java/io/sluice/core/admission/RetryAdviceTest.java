package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Retry-After bases of one pool, on a fake clock and with no jitter. */
class RetryAdviceTest {
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool =
      PoolPolicy.builder("p", 1000)
          .retryAfter(Duration.ofSeconds(2), Duration.ofSeconds(60))
          .retryAfterJitter(0.0)
          .build();
  private final RetryAdvice advice =
      new RetryAdvice(Duration.ofSeconds(10).toNanos(), () -> 0.5, pool);

  @Test
  void withNoCompletionsEveryBaseIsTheMinimum() {
    advice.reconfigure(pool);
    assertThat(advice.forWork(1_000_000, time.nanos())).isEqualTo(2);
    assertThat(advice.forHold()).isEqualTo(2);
    assertThat(advice.seconds(0)).isEqualTo(2);
  }

  @Test
  void aYoungRate_correctedForItsStart_readsTheRateObserved_notOneGrowingFromZero() {
    advice.reconfigure(pool);
    assertThat(advice.startedWorkPerSecond(time.nanos())).isZero(); // nothing completed
    // 100 units a second, each request held 1 s: the true rate is 100/s from the start
    for (int i = 0; i < 3; i++) {
      time.advance(Duration.ofSeconds(1));
      advice.onRelease(100, Duration.ofSeconds(1).toNanos(), time.nanos());
    }
    double raw = advice.completedWorkPerSecond(time.nanos());
    double started = advice.startedWorkPerSecond(time.nanos());
    assertThat(raw).isLessThan(30.0); // the decaying sum after 3 s of a 10 s time constant
    assertThat(started).isBetween(90.0, 110.0);
    // old enough: both read the same
    for (int i = 0; i < 120; i++) {
      time.advance(Duration.ofSeconds(1));
      advice.onRelease(100, Duration.ofSeconds(1).toNanos(), time.nanos());
    }
    assertThat(advice.startedWorkPerSecond(time.nanos()))
        .isCloseTo(
            advice.completedWorkPerSecond(time.nanos()), org.assertj.core.data.Offset.offset(0.1));
  }

  @Test
  void workDrainsAtTheRecentCompletionRate() {
    advice.reconfigure(pool);
    advice.onRelease(0, 0, time.nanos()); // starts the window
    for (int i = 0; i < 10; i++) {
      time.advance(Duration.ofSeconds(1));
      advice.onRelease(100, Duration.ofSeconds(4).toNanos(), time.nanos());
    }
    double rate = advice.completedWorkPerSecond(time.nanos());
    assertThat(rate).isBetween(50.0, 100.0); // decayed sum of 1000 units over tau 10 s
    long expected = (long) Math.ceil(2000 / rate);
    assertThat(advice.forWork(2000, time.nanos())).isEqualTo(expected);
    assertThat(advice.forHold()).isEqualTo(4); // EWMA of identical holds
  }

  @Test
  void valuesAreClampedToThePoolsMaximum() {
    advice.reconfigure(pool);
    assertThat(advice.seconds(Duration.ofHours(1).toNanos())).isEqualTo(60);
  }
}
