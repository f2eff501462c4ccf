package io.sluice.bootstrap;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.session.HoldTimer;
import io.sluice.core.session.TailHolds;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.QueueTimer;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import java.time.Clock;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.Function;

/**
 * A runtime of its own for one policy, built by the live server's {@link RuntimeFactory}: the
 * configured pools and classes in a controller of their own, a private in-memory store (never the
 * shared Redis), a scratch metrics registry, nothing shared with a live server. The warm-up before
 * readiness drives one through the real handlers ({@link IsolatedWarmUp}); a replay drives one's
 * sessions on a virtual clock ({@code io.sluice.bootstrap.replay}). Close it when done.
 */
public final class IsolatedRuntime implements AutoCloseable {
  private final PrometheusMeterRegistry scratch =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Stores stores;
  private final AdmissionController controller;
  private final AdmissionMetrics metrics;
  private final AdmissionRuntime runtime;

  private IsolatedRuntime(
      SluiceConfig config,
      Ticker ticker,
      Clock clock,
      QueueTimer timer,
      HoldTimer holdTimer,
      Function<SluiceConfig.DecisionLog, DecisionLog> decisionLogs,
      OutputReserves reserves,
      DoubleSupplier jitter) {
    this.stores = Stores.isolatedMemory(clock); // never the shared Redis
    this.controller = Controllers.forPolicy(config, jitter);
    this.metrics = new AdmissionMetrics(scratch, ticker::nanos);
    metrics.bindPools(controller);
    SluiceConfig.Estimation est = config.estimation();
    // the live server's factory on parts of this runtime's own: nothing learned, held or counted
    // here reaches a live state
    this.runtime =
        new RuntimeFactory(
                controller,
                metrics,
                new TokenCountCache(est.tokenCacheChars(), est.tokenCacheMinChars()),
                c -> decisionLogs.apply(c.decisionLog()),
                ticker,
                clock,
                timer,
                stores,
                TenantCaps.none(), // never the shared store
                reserves,
                SharedWorkflowBudget.local(
                    new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS)),
                new TailHolds(),
                Map.of()) // no secrets: nothing here sends a marker
            .build(config, holdTimer);
  }

  /** The warm-up's: on the server's clocks and timer, the decision records discarded. */
  static IsolatedRuntime forWarmUp(
      SluiceConfig config, Ticker ticker, Clock clock, QueueTimer timer) {
    return new IsolatedRuntime(
        config,
        ticker,
        clock,
        timer,
        timer,
        settings -> new DecisionLog(settings, line -> {}, null),
        OutputReserves.off(),
        Math::random);
  }

  /**
   * A replay's: on its virtual {@code ticker}, {@code clock} and {@code holdTimer}, the learned
   * output reserve of the policy's own ({@code estimation.learnedReserve}), the decision log off
   * whatever the policy says (a replay counts its decisions itself: printing a record per replayed
   * request only to drop it was most of a long replay's time). {@code timer} is only the runtime's
   * idle-sweep wheel (never started by a replay).
   */
  public static IsolatedRuntime forReplay(
      SluiceConfig config, Ticker ticker, Clock clock, QueueTimer timer, HoldTimer holdTimer) {
    return onVirtualClock(
        config,
        ticker,
        clock,
        timer,
        holdTimer,
        settings -> new DecisionLog(off(settings), null, null));
  }

  /**
   * A recorded run's (the bench's virtual-time live runs): as {@link #forReplay}, but every
   * decision record written, as JSON lines, to {@code decisionLines} (every request, no per-second
   * bound, no sampling), whatever the policy's {@code decisionLog} says. Both draw their
   * Retry-After jitter from a seeded source: the same arrivals, the same answers.
   */
  public static IsolatedRuntime forRecording(
      SluiceConfig config,
      Ticker ticker,
      Clock clock,
      QueueTimer timer,
      HoldTimer holdTimer,
      Consumer<String> decisionLines) {
    return onVirtualClock(
        config,
        ticker,
        clock,
        timer,
        holdTimer,
        settings -> new DecisionLog(every(settings), decisionLines, null));
  }

  /**
   * A runtime on a virtual clock: the policy's own learned output reserve, the Retry-After jitter
   * seeded, so the same arrivals give the same answers (a recorded run's clients retry after them).
   */
  private static IsolatedRuntime onVirtualClock(
      SluiceConfig config,
      Ticker ticker,
      Clock clock,
      QueueTimer timer,
      HoldTimer holdTimer,
      Function<SluiceConfig.DecisionLog, DecisionLog> decisionLogs) {
    DoubleSupplier seeded = new SplittableRandom(0x5111ceL)::nextDouble;
    return new IsolatedRuntime(
        config,
        ticker,
        clock,
        timer,
        holdTimer,
        decisionLogs,
        new OutputReserves(config.estimation().learnedReserve()),
        seeded);
  }

  private static SluiceConfig.DecisionLog off(SluiceConfig.DecisionLog s) {
    return new SluiceConfig.DecisionLog(
        false,
        s.level(),
        s.sampleRate(),
        s.alwaysLogRejects(),
        s.maxAdmittedPerSecond(),
        s.maxRefusedPerSecond(),
        io.sluice.config.DecisionLogFile.NONE,
        false);
  }

  private static SluiceConfig.DecisionLog every(SluiceConfig.DecisionLog s) {
    return new SluiceConfig.DecisionLog(
        true, s.level(), 1.0, true, 0, 0, io.sluice.config.DecisionLogFile.NONE, false);
  }

  public AdmissionRuntime runtime() {
    return runtime;
  }

  public AdmissionController controller() {
    return controller;
  }

  AdmissionMetrics metrics() {
    return metrics;
  }

  Stores stores() {
    return stores;
  }

  PrometheusMeterRegistry registry() {
    return scratch;
  }

  @Override
  public void close() {
    stores.close();
    scratch.close();
  }
}
