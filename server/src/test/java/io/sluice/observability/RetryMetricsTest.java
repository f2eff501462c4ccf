package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.core.retry.Attempt;
import org.junit.jupiter.api.Test;

/**
 * {@code sluice_attempts_total}: the plain originals (no refusal before) are counted by the
 * window's own count, read at scrape time, beside the series counted per request.
 */
class RetryMetricsTest {
  static Attempt attempt(boolean retry, String previousReason) {
    return new Attempt(
        retry ? 2 : 1,
        retry,
        Attempt.NONE,
        Attempt.NONE,
        previousReason,
        Double.NaN,
        Attempt.NONE,
        null,
        "",
        0,
        null,
        false);
  }

  @Test
  void plainOriginalsAreCountedAtScrapeBesideTheOtherAttempts() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    long[] now = {7_000_000_000_000L};
    RetryMetrics m = new RetryMetrics(registry, () -> now[0]);
    String original =
        "sluice_attempts_total{class=\"chat\",kind=\"original\",pool=\"p\",reason=\"none\"}";
    m.attempted("p", "chat", attempt(false, Attempt.NONE));
    assertThat(registry.scrape()).contains(original + " 1.0");
    m.attempted("p", "chat", Attempt.ORIGINAL_UNSENT);
    m.attempted("p", "chat", attempt(false, Attempt.NONE));
    m.attempted("p", "chat", attempt(true, Attempt.NONE));
    m.attempted("p", "chat", attempt(false, "rate_limited"));
    now[0] += 61_000_000_000L; // a minute on: the count is since the start, not the window's
    m.attempted("p", "chat", attempt(false, Attempt.NONE));
    String scrape = registry.scrape();
    assertThat(scrape)
        .contains(original + " 4.0")
        .contains(
            "sluice_attempts_total{class=\"chat\",kind=\"retry\",pool=\"p\",reason=\"none\"} 1.0")
        .contains(
            "sluice_attempts_total{class=\"chat\",kind=\"original\",pool=\"p\","
                + "reason=\"rate_limited\"} 1.0")
        .containsOnlyOnce("# TYPE sluice_attempts_total counter");
    m.attempted("q", "chat", Attempt.ORIGINAL_UNSENT); // another pool: its own series
    assertThat(registry.scrape())
        .contains(original + " 4.0")
        .contains(
            "sluice_attempts_total{class=\"chat\",kind=\"original\",pool=\"q\",reason=\"none\"}"
                + " 1.0");
  }

  @Test
  void anAttemptAtAnEarlierTime_countsInTheWindow_neverResetsIt() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    long minute = 60_000_000_000L;
    long[] now = {100 * minute + minute / 2};
    RetryMetrics m = new RetryMetrics(registry, () -> now[0]);
    m.attempted("p", "chat", attempt(false, Attempt.NONE), now[0]);
    m.attempted("p", "chat", attempt(true, Attempt.NONE), now[0]);
    // arrived in the minute before, classified now: counted in this window, not a reset
    m.attempted("p", "chat", attempt(true, Attempt.NONE), now[0] - minute);
    assertThat(
            registry
                .get(RetryMetrics.RETRY_AMPLIFICATION)
                .tags("pool", "p", "class", "chat")
                .gauge()
                .value())
        .isEqualTo(3.0);
    assertThat(
            registry
                .get(RetryMetrics.ATTEMPTS)
                .tags("pool", "p", "class", "chat", "kind", "retry", "reason", "none")
                .counter()
                .count())
        .isEqualTo(2.0);
  }
}
