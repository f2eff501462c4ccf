package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.CollectionRegistration;
import io.opentelemetry.sdk.metrics.export.MetricReader;
import java.util.Collection;
import org.junit.jupiter.api.Test;

/**
 * The OTLP counters are the Prometheus meters' numbers, read when the SDK collects: nothing is
 * recorded twice per request, and the two exports cannot disagree.
 */
class OtelCountersTest {

  @Test
  void otlpCounters_readThePrometheusMetersAtCollection() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Reader reader = new Reader();
    try (SdkMeterProvider sdk = SdkMeterProvider.builder().registerMetricReader(reader).build()) {
      OtelCounters.register(sdk.get(OtelRecorder.SCOPE), registry);
      Counter goodput =
          Counter.builder(SloMetrics.ANSWERS)
              .tags("pool", "gpu", "class", "interactive", "tier", "pro", "result", "goodput")
              .tag("instance", "not-exported")
              .register(registry);
      goodput.increment(3);
      Counter.builder(MetricNames.TOKENS_CHARGED)
          .tags("pool", "gpu", "rule", "actual", "direction", "output")
          .register(registry)
          .increment(42);

      Collection<MetricData> first = reader.registration.collectAllMetrics();
      assertThat(value(first, "sluice.answers")).isEqualTo(3).isEqualTo((long) goodput.count());
      assertThat(attributes(first, "sluice.answers"))
          .isEqualTo(
              Attributes.of(
                  OtelRecorder.Sluice.POOL, "gpu",
                  OtelRecorder.Sluice.CLASS, "interactive",
                  OtelRecorder.Sluice.TIER, "pro",
                  OtelRecorder.Sluice.RESULT, "goodput"));
      assertThat(value(first, "sluice.charged.tokens")).isEqualTo(42);
      assertThat(attributes(first, "sluice.charged.tokens").get(GenAi.TOKEN_TYPE))
          .isEqualTo("output");

      goodput.increment();
      assertThat(value(reader.registration.collectAllMetrics(), "sluice.answers")).isEqualTo(4);
    }
  }

  private static LongPointData point(Collection<MetricData> metrics, String name) {
    MetricData m = metrics.stream().filter(d -> d.getName().equals(name)).findFirst().orElseThrow();
    return m.getLongSumData().getPoints().iterator().next();
  }

  private static long value(Collection<MetricData> metrics, String name) {
    return point(metrics, name).getValue();
  }

  private static Attributes attributes(Collection<MetricData> metrics, String name) {
    return point(metrics, name).getAttributes();
  }

  /** Collects on demand. */
  private static final class Reader implements MetricReader {
    CollectionRegistration registration;

    @Override
    public void register(CollectionRegistration r) {
      registration = r;
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType type) {
      return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode forceFlush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }
}
