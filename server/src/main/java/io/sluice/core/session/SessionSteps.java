package io.sluice.core.session;

import java.util.concurrent.CompletionStage;

/**
 * A narrow test seam: a session calls {@link #at} before each step where a failure can happen, so a
 * test can throw there and check that the front end still releases the permit exactly once and ends
 * its exchange. Production passes {@link #NONE} (the call sites stay monomorphic).
 */
public interface SessionSteps {
  enum Step {
    ESTIMATE,
    QUOTA,
    DECIDE,
    ADMIT,
    REJECT,
    METRICS,
    DECISION_LOG,
    RELEASE,
    WAITER
  }

  /** Called before {@code step}; a test's implementation may throw. */
  void at(Step step);

  /** The quota store's answer as the session sees it (a test may fail it). */
  default <T> CompletionStage<T> quota(CompletionStage<T> stage) {
    return stage;
  }

  SessionSteps NONE = step -> {};
}
