package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.ClassPolicy;

/**
 * The series the shipped alerts ({@code k8s/base/prometheusrule.yaml}) {@code rate()} or {@code
 * increase()}, registered at zero for every configured pool (and class) when the pools are bound,
 * so an alert's ratio reads 0 from the start instead of "no data" until the first event (and the
 * first event is counted as an increase). Series of features that are off (replica shares without a
 * shared store, budgets, retries, adaptive and shadow pools) appear when the feature is on.
 */
final class AlertSeries {
  private AlertSeries() {}

  /** Status labels of {@code sluice_upstream_responses_total} the alerts select. */
  private static final int[] UPSTREAM_STATUSES = {200, 429, 503};

  /** Registers the series of every pool of {@code c}; {@code tier}: the tier the counts carry. */
  static void seed(AdmissionMetrics m, AdmissionController c, String tier) {
    MeterRegistry registry = m.registry();
    for (PoolState pool : c.pools()) {
      String p = pool.policy().name();
      for (int status : UPSTREAM_STATUSES) {
        m.upstreamCounter(p, status);
      }
      Counter.builder(MetricNames.RESPONSE_END_UNSEEN)
          .tags("pool", p, "cause", "body_mode_none")
          .register(registry);
      for (ClassPolicy k : c.classes()) {
        String cls = k.name();
        m.decisionCounter(p, cls, tier, "admit", Reason.ADMITTED.code());
        m.decisionCounter(p, cls, tier, "reject", Reason.POOL_SATURATED.code());
        m.permitHold(p, cls);
        Timer.builder(MetricNames.QUEUE_WAIT)
            .tags("pool", p, "class", cls, "outcome", "admitted")
            .serviceLevelObjectives(MeterCache.WAIT_BUCKETS)
            .register(registry);
      }
    }
    Counter.builder(MetricNames.STREAM_ERRORS).tags("cause", "internal").register(registry);
  }
}
