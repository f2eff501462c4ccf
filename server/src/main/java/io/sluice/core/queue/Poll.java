package io.sluice.core.queue;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Result of {@link TenantFairQueue#poll(long)}: the next item by fairness (or null when nothing
 * live is waiting) and the items that had expired by {@code now} and were removed on the way. The
 * caller answers every expired item with 503 {@code queue_timeout}; they are reported exactly once.
 */
public record Poll<T>(@Nullable QueuedItem<T> item, List<QueuedItem<T>> expired) {
  public Poll {
    expired = List.copyOf(expired);
  }

  public boolean hasItem() {
    return item != null;
  }
}
