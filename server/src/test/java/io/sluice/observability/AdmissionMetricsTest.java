package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class AdmissionMetricsTest {
  @Test
  void openStreamsGaugeIsOpenedMinusEveryWayOfClosing() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    for (int i = 0; i < 5; i++) {
      m.streamOpened();
    }
    m.streamClosed("completed");
    m.streamClosed("cancelled");
    m.streamClosed("failed");
    assertThat(m.openStreams()).isEqualTo(2);
    assertThat(registry.get(MetricNames.STREAMS_OPEN).gauge().value()).isEqualTo(2.0);
    assertThat(registry.get(MetricNames.STREAMS).tag("event", "opened").counter().count())
        .isEqualTo(5.0);
    assertThat(registry.get(MetricNames.STREAMS).tag("event", "completed").counter().count())
        .isEqualTo(1.0);
    m.streamClosed("completed");
    m.streamClosed("completed");
    assertThat(registry.get(MetricNames.STREAMS_OPEN).gauge().value()).isZero();
  }
}
