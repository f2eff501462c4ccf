package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code sluice_response_end_unseen_total{pool,cause}} and {@code sluice_permits_tail_held}. */
class ResponseEndUnseenMetricsTest {
  private static final PoolPolicy POOL = io.sluice.core.session.OneSlotPool.pool(100_000, 4);
  private static final ClassPolicy CLASS = io.sluice.core.session.OneSlotPool.INTERACTIVE;

  @Test
  void theCounterCountsEveryStreamAndThePoolsAreListedOnce() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    assertThat(m.responseEndUnseenPools()).isEmpty();
    m.responseEndUnseen("gpu", "body_mode_none");
    m.responseEndUnseen("gpu", "body_mode_none");
    assertThat(
            registry
                .get(MetricNames.RESPONSE_END_UNSEEN)
                .tags("pool", "gpu", "cause", "body_mode_none")
                .counter()
                .count())
        .isEqualTo(2.0);
    assertThat(m.responseEndUnseenPools()).containsExactly("gpu");
  }

  @Test
  void theGaugeReadsThePermitsHeldForATail() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    AdmissionController c = io.sluice.core.session.OneSlotPool.controller(POOL);
    m.bindPools(c);
    Tenant t = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));
    Decision d =
        c.decide(
            new io.sluice.core.admission.AdmissionRequest(
                POOL, CLASS, t, 100, 0, Duration.ofSeconds(30).toNanos(), -1, -1),
            Ask.hold(0, null, 0));
    Permit p = ((Decision.Admit) d).permit();
    assertThat(registry.get(MetricNames.PERMITS_TAIL_HELD).tag("pool", "gpu").gauge().value())
        .isZero();
    assertThat(p.markEndUnseen()).isTrue();
    assertThat(p.markEndUnseen()).isFalse();
    assertThat(registry.get(MetricNames.PERMITS_TAIL_HELD).tag("pool", "gpu").gauge().value())
        .isEqualTo(1.0);
    assertThat(p.release(Outcome.COMPLETED, 1)).isTrue();
    assertThat(p.release(Outcome.COMPLETED, 2)).isFalse();
    assertThat(registry.get(MetricNames.PERMITS_TAIL_HELD).tag("pool", "gpu").gauge().value())
        .isZero();
    assertThat(p.markEndUnseen()).as("released: nothing to hold").isFalse();
  }

  private static double source(SimpleMeterRegistry registry, String source) {
    return registry
        .get(MetricNames.POOL_SERVICE_TIME_SOURCE)
        .tags("pool", "gpu", "source", source)
        .gauge()
        .value();
  }

  @Test
  void theServiceTimeSourceIsAGuessUntilAResponseEndIsSeen() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AdmissionMetrics m = new AdmissionMetrics(registry, () -> 0L);
    AdmissionController c = io.sluice.core.session.OneSlotPool.controller(POOL);
    m.bindPools(c);
    Tenant t = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));
    assertThat(source(registry, "guess")).isEqualTo(1.0);
    assertThat(source(registry, "learned")).isZero();
    Permit unseen = admit(c, t);
    assertThat(unseen.markEndUnseen()).isTrue();
    assertThat(unseen.release(Outcome.COMPLETED, 1_000_000_000L)).isTrue();
    assertThat(source(registry, "guess")).as("an unseen end teaches nothing").isEqualTo(1.0);
    Permit seen = admit(c, t);
    assertThat(seen.release(Outcome.COMPLETED, 500_000_000L)).isTrue();
    assertThat(source(registry, "guess")).isZero();
    assertThat(source(registry, "learned")).isEqualTo(1.0);
  }

  private static Permit admit(AdmissionController c, Tenant t) {
    Decision d =
        c.decide(
            new io.sluice.core.admission.AdmissionRequest(
                POOL, CLASS, t, 100, 0, Duration.ofSeconds(30).toNanos(), -1, -1),
            Ask.hold(0, null, 0));
    return ((Decision.Admit) d).permit();
  }
}
