package io.sluice.core.store;

/**
 * Reachability of a store as seen by its last calls.
 *
 * @param healthy false after a failed call until the next successful one
 * @param failures failed calls since start
 * @param consecutiveFailures failed calls since the last success
 * @param lastError text of the last failure, empty when none
 */
public record StoreHealth(
    boolean healthy, long failures, long consecutiveFailures, String lastError) {
  public static final StoreHealth ALWAYS_HEALTHY = new StoreHealth(true, 0, 0, "");
}
