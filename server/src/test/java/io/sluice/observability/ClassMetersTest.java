package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.core.admission.Outcome;
import io.sluice.core.session.Charge;
import org.junit.jupiter.api.Test;

/**
 * {@link ClassMeters} holds the meters it records into (the admit latency of each phase, a family's
 * meters in copy-on-write rows): each record lands in its own series, read through Micrometer's API
 * on the real Prometheus registry, on its first use and after.
 */
class ClassMetersTest {
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final AdmissionMetrics metrics = new AdmissionMetrics(registry, () -> 0L);

  private long admitLatencyCount(String phase) {
    return registry
        .get(MetricNames.DECISION_LATENCY)
        .tags("phase", phase, "decision", "admit")
        .timer()
        .count();
  }

  @Test
  void admitLatency_isRecordedInItsPhasesTimer_theBodysMadeOnFirstUse() {
    ClassMeters m = metrics.forClass("gpu", "chat", "free");
    assertThat(
            registry
                .find(MetricNames.DECISION_LATENCY)
                .tags("phase", "body", "decision", "admit")
                .timer())
        .as("no body series before a decision at the body")
        .isNull();
    m.admitted("body", 1_000);
    m.admitted("headers", 2_000);
    m.admitted("body", 3_000);
    metrics.forClass("gpu", "batch", "free").admitted("body", 4_000);
    assertThat(admitLatencyCount("body")).isEqualTo(3);
    assertThat(admitLatencyCount("headers")).isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.DECISION_LATENCY)
                .tags("phase", "body", "decision", "admit")
                .timer()
                .totalTime(java.util.concurrent.TimeUnit.NANOSECONDS))
        .isEqualTo(8_000);
  }

  @Test
  void everyChargeRule_isCountedInItsOwnSeries_onFirstUseAndAfter() {
    ClassMeters m = metrics.forClass("gpu", "chat", "free");
    String[] rules = {
      Charge.REPORTED, Charge.STREAMED, Charge.NO_ANSWER, Charge.UPSTREAM_ERROR, Charge.RESERVE
    };
    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < rules.length; i++) {
        m.charged(rules[i], 10 + i, 100 + i);
      }
    }
    m.charged(new String(Charge.STREAMED), 1, 1); // equal by value, not the constant
    for (int i = 0; i < rules.length; i++) {
      double extra = rules[i].equals(Charge.STREAMED) ? 1 : 0;
      assertThat(charged(rules[i], "input")).as(rules[i]).isEqualTo(2 * (10 + i) + extra);
      assertThat(charged(rules[i], "output")).as(rules[i]).isEqualTo(2 * (100 + i) + extra);
    }
  }

  private double charged(String rule, String direction) {
    return registry
        .get(MetricNames.TOKENS_CHARGED)
        .tags("pool", "gpu", "rule", rule, "direction", direction)
        .counter()
        .count();
  }

  @Test
  void releasedAndUpstream_eachOutcomeAndStatusClass_keepTheirCounts() {
    ClassMeters m = metrics.forClass("gpu", "chat", "free");
    for (int round = 0; round < 3; round++) {
      for (Outcome o : Outcome.values()) {
        m.released(o, 1_000_000L);
      }
      for (int status : new int[] {101, 200, 302, 404, 429, 500, 503, 700}) {
        m.upstreamResponse(status);
      }
    }
    for (Outcome o : Outcome.values()) {
      assertThat(
              registry
                  .get(MetricNames.PERMITS_RELEASED)
                  .tags("pool", "gpu", "class", "chat")
                  .tag("outcome", o.name().toLowerCase(java.util.Locale.ROOT))
                  .counter()
                  .count())
          .as(o.name())
          .isEqualTo(3);
    }
    assertThat(
            registry
                .get(MetricNames.PERMIT_HOLD)
                .tags("pool", "gpu", "class", "chat")
                .timer()
                .count())
        .isEqualTo(3L * Outcome.values().length);
    for (String status : new String[] {"1xx", "2xx", "3xx", "4xx", "429", "5xx", "503", "7xx"}) {
      assertThat(
              registry
                  .get(MetricNames.UPSTREAM_RESPONSES)
                  .tags("pool", "gpu", "status", status)
                  .counter()
                  .count())
          .as(status)
          .isEqualTo(3);
    }
  }
}
