package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The session tests' pool: one request at a time (maxRequests 1), queue-hold on (5 s), and one
 * class, {@code interactive}, that may wait up to 2 s. Shared by the session and recorder tests.
 */
public final class OneSlotPool {
  private OneSlotPool() {}

  /**
   * The sessions of the session tests: {@code controller}'s pools, the default estimator with a
   * small token cache, 500 default input tokens, no tenant caps across replicas.
   */
  public static Sessions sessions(
      AdmissionController controller,
      io.sluice.core.quota.TenantQuotas quotas,
      io.sluice.core.time.Ticker ticker,
      java.time.Clock clock,
      HoldTimer timer,
      SessionListener listener) {
    return sessionsBuilder(controller, quotas, ticker, clock, timer, listener).build();
  }

  /** Tenant quotas on an in-memory store of {@code clock}, failing open. */
  public static io.sluice.core.quota.TenantQuotas quotas(java.time.Clock clock) {
    return new io.sluice.core.quota.TenantQuotas(
        new io.sluice.store.memory.InMemoryStore(
            clock, io.sluice.store.memory.InMemoryStore.Bounds.DEFAULT),
        "test_",
        io.sluice.core.quota.TenantQuotas.FailureMode.OPEN);
  }

  /**
   * Sessions of {@link #controller()} on a fixed clock (2027-01-15), quotas failing open, no hold
   * timer, whose events are added to {@code events}.
   */
  public static Sessions recording(
      io.sluice.core.time.Ticker ticker, java.util.List<SessionEvent> events) {
    java.time.Clock clock =
        java.time.Clock.fixed(
            java.time.Instant.ofEpochMilli(1_800_000_000_000L), java.time.ZoneOffset.UTC);
    return sessions(
        controller(), quotas(clock), ticker, clock, (delay, task) -> () -> {}, events::add);
  }

  /** {@link #sessions}'s builder, for a test that sets one more part. */
  public static Sessions.Builder sessionsBuilder(
      AdmissionController controller,
      io.sluice.core.quota.TenantQuotas quotas,
      io.sluice.core.time.Ticker ticker,
      java.time.Clock clock,
      HoldTimer timer,
      SessionListener listener) {
    return Sessions.builder(
            controller,
            quotas,
            new io.sluice.core.estimate.TokenEstimator(
                io.sluice.core.estimate.EstimatorSettings.defaults(),
                new io.sluice.core.estimate.TokenCountCache(1 << 16, 32),
                null),
            ticker,
            clock,
            timer,
            listener)
        .defaultInputTokens(500);
  }

  /**
   * Pool {@code gpu} of {@code capacityWorkUnits} work units and {@code maxRequests} request slots,
   * one unit per input or output token, 5 s hold.
   */
  public static PoolPolicy pool(long capacityWorkUnits, int maxRequests) {
    return PoolPolicy.builder("gpu", capacityWorkUnits)
        .maxRequests(maxRequests)
        .maxMessageTimeout(Duration.ofSeconds(5))
        .retryAfterJitter(0.0)
        .defaultServiceTime(Duration.ofSeconds(1))
        .build();
  }

  /**
   * Pool {@code gpu} of the workflow tests: 100,000 work units, ten request slots, no hold,
   * adaptive off, {@code fanOut} and a workflow budget of one concurrent workflow.
   */
  public static PoolPolicy fanOutPool(io.sluice.core.policy.FanOutPolicy fanOut) {
    return PoolPolicy.builder("gpu", 100_000)
        .maxRequests(10)
        .retryAfterJitter(0.0)
        .defaultServiceTime(Duration.ofSeconds(1))
        .adaptive(io.sluice.core.policy.AdaptivePolicy.OFF)
        .fanout(fanOut)
        .workflow(new io.sluice.core.policy.WorkflowPolicy(1, 0))
        .build();
  }

  /** Pool {@code gpu}: 100,000 work units, one request slot, 5 s hold. */
  public static final PoolPolicy POOL = pool(100_000, 1);

  /** Class {@code interactive}: the whole pool, 30 s deadline, 2 s queue wait. */
  public static final ClassPolicy INTERACTIVE = interactive(Duration.ofSeconds(2));

  /** Class {@code interactive}: the whole pool, 30 s deadline, {@code maxQueueWait}. */
  public static ClassPolicy interactive(Duration maxQueueWait) {
    return ClassPolicy.builder("interactive")
        .shares(1.0, 0.0)
        .deadline(Duration.ofSeconds(30))
        .maxQueueWait(maxQueueWait)
        .outputTokens(100, 1000)
        .queue(1.0, 10, 1.0)
        .build();
  }

  /** A fresh controller over {@link #POOL} and {@link #INTERACTIVE}. */
  public static AdmissionController controller() {
    return controller(POOL);
  }

  /** A fresh controller over {@code pool} and {@link #INTERACTIVE}. */
  public static AdmissionController controller(PoolPolicy pool) {
    return new AdmissionController(
        List.of(pool),
        List.of(INTERACTIVE),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  /**
   * A chat request on route {@code chat} of {@link #POOL} in {@link #INTERACTIVE}, arriving at
   * {@code nowNanos} with a 30 s deadline.
   */
  public static Subject chat(
      Tenant tenant, long nowNanos, @Nullable String operationId, long maxHoldNanos) {
    return new Subject(
        "chat",
        POOL,
        INTERACTIVE,
        RequestFormat.OPENAI_CHAT,
        tenant,
        nowNanos,
        nowNanos + Duration.ofSeconds(30).toNanos(),
        operationId,
        maxHoldNanos,
        false,
        0,
        null,
        io.sluice.core.session.Signals.NONE);
  }
}
