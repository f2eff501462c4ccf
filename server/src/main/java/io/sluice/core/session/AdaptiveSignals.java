package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import org.jspecify.annotations.Nullable;

/**
 * An adaptive pool's time per output token, learned from the sessions' events: a listener of {@link
 * SessionEvent.Released} (registered beside the metrics, {@code RuntimeFactory}), reading only the
 * {@link RequestFacts} it carries. Also the adaptive pool a session's own signals go to (status,
 * time to first token: {@link ResponseMeter}) and its limit at the decision, for the decision
 * record. Thread-safe: the pool's limit is.
 */
public final class AdaptiveSignals implements SessionListener {
  private final AdmissionController controller;

  public AdaptiveSignals(AdmissionController controller) {
    this.controller = controller;
  }

  /**
   * A completed answer's time-per-output-token sample: from its first chunk to its end over the
   * tokens after the first when it streamed, else its whole time over its tokens.
   */
  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (!(event instanceof SessionEvent.Released r)) {
      return;
    }
    RequestFacts f = r.facts();
    long out = r.usage().outputTokens();
    if (r.outcome() != Outcome.COMPLETED
        || f.end().upstreamStatus() / 100 != 2
        || out <= 0
        || !f.run().permit()) {
      return;
    }
    PoolState pool = adaptive(controller.pool(f.run().pool().name()));
    if (pool == null) {
      return;
    }
    double tpot = tpot(r.heldNanos(), f.end().firstChunkNanos(), out);
    pool.onLatency(AdaptiveLimit.Signal.TPOT, tpot, f.run().admittedAtNanos());
  }

  /**
   * The time per output token of an answer held {@code heldNanos} whose first chunk came {@code
   * firstChunkNanos} after its admission (-1: none before its last) and that produced {@code
   * outputTokens} ({@code > 0}).
   */
  static double tpot(long heldNanos, long firstChunkNanos, long outputTokens) {
    return firstChunkNanos >= 0 && outputTokens >= 2
        ? (double) (heldNanos - firstChunkNanos) / (outputTokens - 1)
        : (double) heldNanos / outputTokens;
  }

  /** The pool of a request (its permit's, else its own) when its limit is adaptive, else null. */
  static @Nullable PoolState pool(Sessions env, Subject subject, @Nullable Permit p) {
    return adaptive(p != null ? p.pool() : env.controller().pool(subject.pool().name()));
  }

  /** An adaptive pool's limit now, for the decision record; null for a fixed pool. */
  static AdaptiveLimit.@Nullable Snapshot limit(Sessions env, Subject subject, @Nullable Permit p) {
    AdaptiveLimit a = adaptiveLimit(env, subject, p);
    return a == null ? null : a.snapshot(env.ticker().nanos());
  }

  /** As above, at {@code nowNanos}: a time the caller read already (no read of its own). */
  static AdaptiveLimit.@Nullable Snapshot limit(
      Sessions env, Subject subject, @Nullable Permit p, long nowNanos) {
    AdaptiveLimit a = adaptiveLimit(env, subject, p);
    return a == null ? null : a.snapshot(nowNanos);
  }

  private static @Nullable AdaptiveLimit adaptiveLimit(
      Sessions env, Subject subject, @Nullable Permit p) {
    PoolState pool = pool(env, subject, p);
    return pool == null ? null : pool.adaptive();
  }

  private static @Nullable PoolState adaptive(@Nullable PoolState pool) {
    return pool != null && pool.adaptive() != null ? pool : null;
  }
}
