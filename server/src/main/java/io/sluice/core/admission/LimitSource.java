package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import org.jspecify.annotations.Nullable;

/**
 * Something that moves a pool's numbers: the configured limit, the adaptive limit, a replica's
 * share of the pool. The pool composes its sources in registration order into the {@link
 * PoolLimits} its ledger enforces — each source takes what the ones before it left and returns it
 * replaced or narrowed — and recomposes whenever one of them says its numbers changed, starting
 * what then fits. As Netflix concurrency-limits plugs a {@code Limit} into a limiter ({@code
 * AbstractLimiter}, {@code Limit.notifyOnChange}), the source owns its rule and the pool owns the
 * lock and the accounting.
 *
 * <p>A new source is one file implementing this interface plus one registration line in {@link
 * PoolState}'s list of sources (CONTRIBUTING.md, "Adding a limit source").
 */
public interface LimitSource {
  /**
   * The limits after this source, given the limits the sources before it left. Called under the
   * pool's lock, on every recomposition: cheap, no blocking, no call back into the pool.
   */
  PoolLimits applyTo(PoolLimits limits);

  /**
   * A hot reload: the pool's configured policy is now {@code next} (under the pool's lock, before
   * the pool recomposes). The default keeps nothing that depends on the policy.
   */
  default void reconfigure(PoolPolicy next) {}

  /**
   * The pool registers here once, when it is built; the source calls {@code listener} (outside the
   * pool's lock) whenever its numbers changed. The default: a source whose numbers change only
   * through the pool's own calls.
   */
  default void notifyOnChange(Listener listener) {}

  /**
   * What the pool will have again once a pause this source holds it in ends by itself (an outage
   * the upstream announced with a Retry-After), given what the sources before it left ({@code
   * before}; null: nothing pending): the wait predictions then count on the limits a waiting
   * request will start under, not on the floor the pause holds. Under the pool's lock, as {@link
   * #applyTo}. The default passes {@code before} on.
   */
  default PoolLimits.@Nullable Resume resume(PoolLimits.@Nullable Resume before, long nowNanos) {
    return before;
  }

  /** The pool's side of {@link #notifyOnChange}. */
  @FunctionalInterface
  interface Listener {
    /**
     * The source's numbers changed at {@code nowNanos}: the pool takes its lock, recomposes its
     * limits from every source, applies what changed and starts the waiting requests that now fit.
     */
    void changed(long nowNanos);
  }
}
