package io.sluice.core.store;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Fixed-window counters. One call is one batch: all increments of a batch are sent together (one
 * pipeline / one lock round), in order, so a key that appears twice sees its first increment.
 *
 * <p>Implementations never block the caller; the stage completes exceptionally with a {@link
 * StoreException} when the backend is unavailable or too slow.
 */
public interface CounterStore {
  /**
   * Adds each increment and returns the counters' values after adding, in the order of {@code
   * batch}.
   */
  CompletionStage<long[]> increment(List<CounterIncrement> batch);

  /** Current reachability of the backend, for health reporting. */
  StoreHealth health();

  /**
   * Whether the counters live in this process (no round trip worth timing: the stage is complete
   * when {@link #increment} returns).
   */
  default boolean inProcess() {
    return false;
  }
}
