package io.sluice.core.adapt;

import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Where the replicas of a deployment keep one learned limit per pool (Redis: one hash per pool, one
 * atomic script per exchange; in memory for one process). The rule the store applies in every
 * exchange ({@link SharedLimit#exchange}):
 *
 * <ul>
 *   <li>a decrease is applied as a minimum: {@code f ← min(f, to)} (two replicas that shrink the
 *       same limit for the same congestion do not compound);
 *   <li>a growth is applied only if the pool's limit is still the one the replica grew from and the
 *       last change is at least {@code minGapMillis} old (one step per interval for the whole pool,
 *       whatever the replica count);
 *   <li>a pause is extended to the latest {@code now + pauseMillis} any replica reported;
 *   <li>each latency baseline is the lowest any replica measured within {@code baselineWindow}.
 * </ul>
 */
public interface LimitStore {
  /** Sends this replica's news for one pool and answers the pool's shared state. */
  CompletionStage<Shared> exchange(String namespace, String pool, Exchange exchange);

  /**
   * One replica's exchange.
   *
   * @param proposal what its own evidence did to the limit since the last exchange (null: nothing)
   * @param pauseMillis an upstream Retry-After it saw, still to run (0: none)
   * @param ttftBaselineNanos the no-load time to first token it measured itself (NaN: none)
   * @param tpotBaselineNanos the same for time per output token
   * @param minGapMillis a growth is applied only this long after the pool's last change
   * @param baselineWindowMillis a baseline older than this is forgotten; the record expires after
   *     twice this without an exchange
   */
  record Exchange(
      AdaptiveLimit.@Nullable Proposal proposal,
      long pauseMillis,
      double ttftBaselineNanos,
      double tpotBaselineNanos,
      long minGapMillis,
      long baselineWindowMillis) {}

  /**
   * The pool's shared state.
   *
   * @param fraction the pool's limit as a fraction of its ceiling (NaN: no replica proposed one
   *     yet)
   * @param cause why it last changed
   * @param pauseRemainingMillis how long new admission stays paused (0: not paused)
   */
  record Shared(
      double fraction,
      AdaptiveLimit.Cause cause,
      long pauseRemainingMillis,
      double ttftBaselineNanos,
      double tpotBaselineNanos) {}
}
