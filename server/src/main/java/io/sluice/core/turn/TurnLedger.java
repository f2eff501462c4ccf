package io.sluice.core.turn;

import io.sluice.core.store.PoolKeys;
import java.util.concurrent.CompletionStage;

/**
 * The store port of an agent run's turns ({@code agentRuns}, docs/mcp.md "Retries per turn"): per
 * run, turn and pool (an MCP tool is its pool), the calls shed and the retries that followed,
 * shared by the replicas, so that "a shed call is retried at most once in the same turn" holds
 * whatever replica the retry reaches. Every call is one atomic step; each record expires {@code
 * ttlMillis} after its last write (on the store's clock), so the store holds only recent turns.
 *
 * <p>The layout (Redis: {@code <namespace>{<pool>}:turn:<run>:<turn>}, a hash of {@code shed} and
 * {@code retry}) is the store's; the core sees only this port.
 */
public interface TurnLedger {
  /**
   * A call of the pool in the run's turn: no shed call of the pool in this turn, it is a first try
   * (nothing written, allowed); else it is a retry of a shed call, counted, and refused when the
   * turn's retries would pass {@code maxRetries}.
   */
  CompletionStage<Verdict> call(
      String namespace, String pool, String run, String turn, int maxRetries, long ttlMillis);

  /** A call of the pool in the run's turn was shed (a retryable refusal): counted. */
  CompletionStage<Void> shed(
      String namespace, String pool, String run, String turn, long ttlMillis);

  /**
   * {@code <namespace>{<pool>}:turn:<run>:<turn>}, hash-tagged on the pool ({@link PoolKeys}); the
   * run is at most {@code workflow}'s bound and the turn at most 128 characters, so a key is
   * bounded.
   */
  static String key(String namespace, String pool, String run, String turn) {
    return PoolKeys.key(namespace, pool, "turn:" + run + ":" + turn);
  }

  /**
   * The store's answer to {@link #call}.
   *
   * @param allowed whether the call may go on
   * @param sheds calls of the pool shed in the turn so far
   * @param retries retries of the pool in the turn, this one included when allowed
   */
  record Verdict(boolean allowed, long sheds, long retries) {
    /** A first try: no shed in the turn. */
    public static final Verdict FIRST = new Verdict(true, 0, 0);
  }
}
