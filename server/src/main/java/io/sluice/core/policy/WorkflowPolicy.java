package io.sluice.core.policy;

/**
 * {@code pools.<name>.workflow}: what one workflow (an agent run, the trusted {@code workflow}
 * signal) may hold of the pool at once, admitted or waiting in its queue. Beyond either number the
 * request is refused 429 {@code fanout_budget}. 0 turns that number off; {@link #OFF} both.
 *
 * @param maxRequests concurrent requests of one workflow
 * @param maxWork work units of one workflow in flight or queued (a workflow holding nothing is
 *     never refused for work: its first request may be larger than the budget, as a request larger
 *     than its class runs alone rather than never)
 */
public record WorkflowPolicy(int maxRequests, long maxWork) {
  public static final WorkflowPolicy OFF = new WorkflowPolicy(0, 0);

  public WorkflowPolicy {
    if (maxRequests < 0) {
      throw new IllegalArgumentException(
          "workflow.maxRequests: " + maxRequests + " (expected: >= 0, 0 = no cap)");
    }
    if (maxWork < 0) {
      throw new IllegalArgumentException(
          "workflow.maxWork: " + maxWork + " (expected: >= 0, 0 = no cap)");
    }
  }

  /** Whether the budget applies at all. */
  public boolean enabled() {
    return maxRequests > 0 || maxWork > 0;
  }
}
