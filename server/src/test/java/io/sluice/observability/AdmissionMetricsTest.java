package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AdmissionMetricsTest {
  /** A tally a test sets by hand. */
  static final class Tally implements StreamTally {
    long opened;
    final Map<Close, Long> closed = new EnumMap<>(Close.class);

    @Override
    public long opened() {
      return opened;
    }

    @Override
    public long closed(Close how) {
      return closed.getOrDefault(how, 0L);
    }

    @Override
    public int open() {
      long c = closed.values().stream().mapToLong(Long::longValue).sum();
      return (int) (opened - c);
    }
  }

  @Test
  void classMetersChargeTheSameCountersAsThePoolMethod() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    ClassMeters meters = m.forClass("gpu", "chat", "free");
    meters.charged(io.sluice.core.session.Charge.REPORTED, 10, 3);
    meters.charged(io.sluice.core.session.Charge.REPORTED, 5, 0);
    meters.charged("custom", 0, 2);
    m.charged("gpu", io.sluice.core.session.Charge.REPORTED, 1, 1);
    assertThat(charged(registry, "reported", "input")).isEqualTo(16.0);
    assertThat(charged(registry, "reported", "output")).isEqualTo(4.0);
    assertThat(charged(registry, "custom", "output")).isEqualTo(2.0);
    assertThat(
            registry
                .find(MetricNames.TOKENS_CHARGED)
                .tag("rule", "custom")
                .tag("direction", "input")
                .counter())
        .isNull();
  }

  private static double charged(SimpleMeterRegistry registry, String rule, String direction) {
    return registry
        .get(MetricNames.TOKENS_CHARGED)
        .tag("pool", "gpu")
        .tag("rule", rule)
        .tag("direction", direction)
        .counter()
        .count();
  }

  @Test
  void streamMetersReadTheAdaptersCountsAtScrapeTime() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    Tally t = new Tally();
    m.bindStreams(t);
    for (StreamTally.Close how : StreamTally.Close.values()) { // every series exists from start
      assertThat(
              registry.get(MetricNames.STREAMS).tag("event", how.tag()).functionCounter().count())
          .isZero();
    }
    t.opened = 5;
    t.closed.put(StreamTally.Close.COMPLETED, 2L);
    t.closed.put(StreamTally.Close.FAILED, 1L);
    assertThat(registry.get(MetricNames.STREAMS_OPEN).gauge().value()).isEqualTo(2.0);
    assertThat(registry.get(MetricNames.STREAMS).tag("event", "opened").functionCounter().count())
        .isEqualTo(5.0);
    assertThat(
            registry.get(MetricNames.STREAMS).tag("event", "completed").functionCounter().count())
        .isEqualTo(2.0);
    assertThat(registry.get(MetricNames.STREAMS).tag("event", "failed").functionCounter().count())
        .isEqualTo(1.0);
  }

  @Test
  void tokenCacheMetersReadTheCache() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    TokenCountCache cache = new TokenCountCache(1 << 20, 16);
    m.bindTokenCache(cache);
    TokenEstimator estimator = new TokenEstimator(EstimatorSettings.defaults(), cache, null);
    byte[] body =
        ("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"system\",\"content\":"
                + "\"You are a helpful assistant for a travel agency.\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    estimator.estimate(RequestFormat.AUTO, body, new EstimateLimits(10, 100));
    estimator.estimate(RequestFormat.AUTO, body, new EstimateLimits(10, 100));

    assertThat(
            registry
                .get(MetricNames.TOKEN_CACHE_LOOKUPS)
                .tag("result", "miss")
                .functionCounter()
                .count())
        .isEqualTo(1.0);
    assertThat(
            registry
                .get(MetricNames.TOKEN_CACHE_LOOKUPS)
                .tag("result", "hit")
                .functionCounter()
                .count())
        .isEqualTo(1.0);
    assertThat(registry.get(MetricNames.TOKEN_CACHE_ENTRIES).gauge().value()).isEqualTo(1.0);
    assertThat(registry.get(MetricNames.TOKEN_CACHE_CHARS).gauge().value())
        .isEqualTo(cache.weightedChars())
        .isPositive();
  }
}
