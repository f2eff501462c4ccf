package io.sluice.extproc;

import java.util.concurrent.CompletionStage;

/**
 * A narrow test seam: a stream calls {@link #at} at every step where a failure can happen (reading
 * the request, resolving it, estimating, the quota store, deciding, encoding an answer, metrics,
 * the decision log, releasing), so a test can throw there and check that the stream still releases
 * its permit exactly once, deregisters and ends non-OK. Production uses {@link #NONE} only (the
 * call sites stay monomorphic and compile to nothing).
 */
interface StreamFaults {
  enum Step {
    RESOLVE,
    ESTIMATE,
    QUOTA,
    DECIDE,
    ADMIT,
    REJECT,
    ANSWER,
    METRICS,
    DECISION_LOG,
    RELEASE,
    WAITER,
    CANCEL,
    HALF_CLOSE
  }

  /** Called before {@code step}; a test's implementation may throw. */
  void at(Step step);

  /** The quota store's answer as the stream sees it (a test may fail it). */
  default <T> CompletionStage<T> quota(CompletionStage<T> stage) {
    return stage;
  }

  StreamFaults NONE = step -> {};

  /**
   * The same seam for the steps the stream's {@link io.sluice.core.session.AdmissionSession} takes
   * (estimate, quota, decide, admit, reject, metrics, decision log, release, waiter): each fires
   * this injector's step of the same name.
   */
  static io.sluice.core.session.SessionSteps sessionSteps(StreamFaults faults) {
    if (faults == NONE) {
      return io.sluice.core.session.SessionSteps.NONE;
    }
    return new io.sluice.core.session.SessionSteps() {
      @Override
      public void at(io.sluice.core.session.SessionSteps.Step step) {
        faults.at(StreamFaults.Step.valueOf(step.name()));
      }

      @Override
      public <T> CompletionStage<T> quota(CompletionStage<T> stage) {
        return faults.quota(stage);
      }
    };
  }
}
