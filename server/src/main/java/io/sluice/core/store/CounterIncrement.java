package io.sluice.core.store;

/**
 * One fixed-window counter increment: add {@code hits} to {@code key} and (re)set its expiry to
 * {@code expirySeconds}. {@code hits} may be 0 (read the current value without consuming).
 */
public record CounterIncrement(String key, long hits, long expirySeconds) {
  public CounterIncrement {
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException("key: " + key + " (expected: non-empty)");
    }
    if (hits < 0) {
      throw new IllegalArgumentException("hits: " + hits + " (expected: >= 0)");
    }
    if (expirySeconds <= 0) {
      throw new IllegalArgumentException("expirySeconds: " + expirySeconds + " (expected: > 0)");
    }
  }
}
