package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.core.time.Ticker;
import org.junit.jupiter.api.Test;

/**
 * The registry's clock: wall time refreshed by the ticker's reads (at most once a millisecond of
 * ticker time) and before a scrape, monotonic time exact; a summary's decaying max rotates on it.
 */
class MeterClockTest {
  private static final long START = 9_123_456_789_000L; // a large start: no "zero means unset"

  @Test
  void wallTimeMovesWithTheTickerReadsAndTheScrape() {
    long[] wall = {1_700_000_000_000L};
    long[] nanos = {START};
    MeterClock clock = new MeterClock(() -> wall[0]);
    Ticker ticker = clock.feeding(() -> nanos[0]);
    assertThat(ticker.nanos()).isEqualTo(START); // the same nanos (and a first refresh)
    wall[0] += 5;
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_000L); // not read until a refresh
    nanos[0] += MeterClock.REFRESH_NANOS - 1; // one tick short: no read of the wall clock
    assertThat(ticker.nanos()).isEqualTo(START + MeterClock.REFRESH_NANOS - 1);
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_000L);
    nanos[0] += 1;
    ticker.nanos();
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_005L);
    wall[0] += 5;
    nanos[0] += MeterClock.REFRESH_NANOS - 1;
    ticker.nanos();
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_005L);
    nanos[0] += 1;
    ticker.nanos();
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_010L);
    wall[0] += 7;
    clock.refresh(); // before a scrape
    assertThat(clock.wallTime()).isEqualTo(1_700_000_000_017L);
  }

  @Test
  void monotonicTimeIsTheSystemsNotCoarse() {
    MeterClock clock = MeterClock.system();
    for (int i = 0; i < 1_000; i++) {
      long before = System.nanoTime();
      long m = clock.monotonicTime();
      long after = System.nanoTime();
      assertThat(m - before).isGreaterThanOrEqualTo(0);
      assertThat(after - m).isGreaterThanOrEqualTo(0);
    }
  }

  @Test
  void aSummarysMaxRotatesOnTheTickersReads() {
    long[] wall = {1_700_000_000_000L};
    long[] nanos = {START};
    MeterClock clock = new MeterClock(() -> wall[0]);
    Ticker ticker = clock.feeding(() -> nanos[0]);
    PrometheusMeterRegistry registry =
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT, new PrometheusRegistry(), clock);
    DistributionSummary s = DistributionSummary.builder("sluice.test").register(registry);
    s.record(5);
    // past the max's whole window (three rotations of two minutes): the old max is gone once a
    // ticker read has refreshed the wall time
    long later = 7 * 60_000L;
    wall[0] += later;
    nanos[0] += later * 1_000_000L;
    ticker.nanos();
    s.record(1);
    assertThat(s.max()).isEqualTo(1.0);
    assertThat(s.count()).isEqualTo(2);
  }
}
