package io.sluice.core.store;

/**
 * One fixed-window counter increment: add {@code hits} to {@code key} and (re)set its expiry to
 * {@code expirySeconds}. {@code hits} may be 0 (read the current value without consuming).
 *
 * @param windowEndMillis when the key's window ends (wall time, epoch millis), 0 when unknown: the
 *     key embeds its window start and is not used after this, so a store may drop it then instead
 *     of waiting for its expiry (the in-memory store does; Redis keeps the reference's EXPIRE)
 */
public record CounterIncrement(String key, long hits, long expirySeconds, long windowEndMillis) {
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
    if (windowEndMillis < 0) {
      throw new IllegalArgumentException(
          "windowEndMillis: " + windowEndMillis + " (expected: >= 0, 0 = unknown)");
    }
  }
}
