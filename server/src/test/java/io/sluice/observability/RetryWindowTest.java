package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.core.retry.Attempt;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@code sluice_retry_amplification}'s window tells a time of its minute or an earlier one without
 * a division: the gauge reads the same as the window that divided on every attempt, at minute
 * boundaries, on negative times, near the clock's top (where {@code FakeTicker} starts) and with
 * attempts stamped at earlier times.
 */
class RetryWindowTest {
  private static final long MINUTE = 60_000_000_000L;

  /** The previous window: the minute by division on every attempt and read. */
  private static final class Reference {
    private long minute = Long.MIN_VALUE;
    private long attempts;
    private long originals;
    private long lastAttempts;
    private long lastOriginals;

    void add(boolean retry, long now) {
      roll(now);
      attempts++;
      if (!retry) {
        originals++;
      }
    }

    double ratio(long now) {
      roll(now);
      long o = originals + lastOriginals;
      long a = attempts + lastAttempts;
      return o == 0 ? (a == 0 ? 1.0 : a) : (double) a / o;
    }

    private void roll(long now) {
      long m = Math.floorDiv(now, MINUTE);
      if (m <= minute) {
        return;
      }
      if (m == minute + 1) {
        lastAttempts = attempts;
        lastOriginals = originals;
      } else {
        lastAttempts = 0;
        lastOriginals = 0;
      }
      attempts = 0;
      originals = 0;
      minute = m;
    }
  }

  private static Attempt attempt(boolean retry) {
    return RetryMetricsTest.attempt(retry, Attempt.NONE);
  }

  private static double amplification(PrometheusMeterRegistry registry) {
    return registry
        .get(RetryMetrics.RETRY_AMPLIFICATION)
        .tags("pool", "p", "class", "chat")
        .gauge()
        .value();
  }

  @Test
  void readsAsTheDivisionPerAttempt_atBoundariesNegativeTimesAndTheClocksTop() {
    long[] starts = {
      0, -MINUTE - 1, 5 * MINUTE - 1, Long.MAX_VALUE - 86_400_000_000_000L, Long.MAX_VALUE - MINUTE
    };
    for (long start : starts) {
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      long[] now = {start};
      RetryMetrics metrics = new RetryMetrics(registry, () -> now[0]);
      Reference ref = new Reference();
      SplittableRandom r = new SplittableRandom(start);
      long[] steps = {0, 1, MINUTE - 1, MINUTE, MINUTE + 1, 2 * MINUTE, MINUTE / 3};
      for (int i = 0; i < 3_000; i++) {
        long step = steps[r.nextInt(steps.length)];
        if (now[0] > Long.MAX_VALUE - step) {
          break; // the clock's end
        }
        now[0] += step;
        boolean retry = r.nextInt(3) == 0;
        // stamped at its arrival: now, or up to two minutes before
        long at = r.nextBoolean() ? now[0] : now[0] - r.nextLong(2 * MINUTE + 1);
        metrics.attempted("p", "chat", attempt(retry), at);
        ref.add(retry, at);
        if (r.nextInt(4) == 0) {
          assertThat(amplification(registry))
              .as("start %d, step %d at %d", start, i, now[0])
              .isEqualTo(ref.ratio(now[0]));
        }
      }
    }
  }

  @Test
  void theFirstNanosecondOfTheNextMinute_rollsTheWindow() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    long[] now = {10 * MINUTE};
    RetryMetrics metrics = new RetryMetrics(registry, () -> now[0]);
    metrics.attempted("p", "chat", attempt(false), now[0]); // minute 10: one original
    metrics.attempted("p", "chat", attempt(true), 11 * MINUTE - 1); // still minute 10
    metrics.attempted("p", "chat", attempt(true), 11 * MINUTE); // minute 11: one retry
    now[0] = 12 * MINUTE - 1;
    assertThat(amplification(registry))
        .isEqualTo(3.0); // minute 11 (1 retry) + minute 10 (2 attempts, 1 original)
    now[0] = 12 * MINUTE; // minute 12: minute 11 is the last one, no original in either
    assertThat(amplification(registry)).isEqualTo(1.0);
  }
}
