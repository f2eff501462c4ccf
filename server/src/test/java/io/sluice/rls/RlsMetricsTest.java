package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class RlsMetricsTest {
  @Test
  void sameDomainAndKeyShareCounters_beyondTheCapKeysShareOther() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RlsMetrics m = new RlsMetrics(registry);
    RlsMetrics.LimitCounters a = m.limit("d", "tenant");
    assertThat(m.limit("d", new String("tenant"))).isSameAs(a);
    assertThat(m.limit("e", "tenant")).isNotSameAs(a);
    for (int i = 0; i < RlsMetrics.MAX_KEYS; i++) {
      m.limit("d", "k" + i);
    }
    RlsMetrics.LimitCounters other = m.limit("d", "late-1");
    assertThat(m.limit("d", "late-2")).isSameAs(other);
    other.totalHits().increment(3);
    assertThat(
            registry
                .get(RlsMetrics.TOTAL_HITS)
                .tags("domain", "d", "key", "_other")
                .counter()
                .count())
        .isEqualTo(3.0);
    assertThat(m.limit("d", "tenant")).as("known keys keep their series").isSameAs(a);
  }

  @Test
  void callCountersByResult() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RlsMetrics m = new RlsMetrics(registry);
    m.call("ok");
    m.call("ok");
    m.call("over_limit");
    m.call("error");
    assertThat(registry.get(RlsMetrics.CALLS).tag("result", "ok").counter().count()).isEqualTo(2.0);
    assertThat(registry.get(RlsMetrics.CALLS).tag("result", "over_limit").counter().count())
        .isEqualTo(1.0);
    assertThat(registry.get(RlsMetrics.CALLS).tag("result", "error").counter().count())
        .isEqualTo(1.0);
  }
}
