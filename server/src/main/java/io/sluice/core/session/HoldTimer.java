package io.sluice.core.session;

/**
 * Runs a task after a delay: the expiry of a held request. An adapter supplies it (the server's
 * timer wheel; a test's manual timer). A task runs at or after its delay, never before.
 */
public interface HoldTimer {
  /** A scheduled task that can be called off. */
  interface Handle {
    void cancel();
  }

  Handle schedule(long delayNanos, Runnable task);
}
