package io.sluice.core.policy;

import java.time.Duration;
import java.util.Objects;

/**
 * One scarce resource behind Envoy (a model deployment, a provider quota).
 *
 * @param name pool name (config key)
 * @param capacityWorkUnits token-weighted work allowed in flight
 * @param maxRequests optional cap on concurrent requests, 0 = no cap
 * @param inputWeight work units per estimated input token
 * @param outputWeight work units per reserved output token
 * @param retryAfterMin lower clamp of Retry-After for 503s from this pool
 * @param retryAfterMax upper clamp of Retry-After for 503s from this pool
 * @param maxMessageTimeout Envoy's {@code max_message_timeout} for routes of this pool (zero =
 *     queue-hold disabled); Sluice cannot read Envoy's config, so it is told here or per route
 * @param retryAfterJitter relative jitter of Retry-After values, 0.2 = ±20%
 * @param holdMargin time reserved between Sluice's own answer and the end of Envoy's hold
 * @param defaultServiceTime before Sluice has measured the pool, the time assumed for a full pool's
 *     worth of work to complete (sets the wait predictor's floor rate)
 */
public record PoolPolicy(
    String name,
    long capacityWorkUnits,
    int maxRequests,
    double inputWeight,
    double outputWeight,
    Duration retryAfterMin,
    Duration retryAfterMax,
    Duration maxMessageTimeout,
    double retryAfterJitter,
    Duration holdMargin,
    Duration defaultServiceTime) {

  public PoolPolicy {
    Objects.requireNonNull(name, "name");
    if (capacityWorkUnits <= 0) {
      throw new IllegalArgumentException(
          "pools." + name + ".capacity: " + capacityWorkUnits + " (expected: > 0)");
    }
    if (maxRequests < 0) {
      throw new IllegalArgumentException(
          "pools." + name + ".maxRequests: " + maxRequests + " (expected: >= 0, 0 = no cap)");
    }
    if (!(inputWeight >= 0) || !(outputWeight >= 0)) {
      throw new IllegalArgumentException(
          "pools." + name + ".inputWeight/outputWeight: must be >= 0");
    }
    if (retryAfterMin.isNegative() || retryAfterMax.compareTo(retryAfterMin) < 0) {
      throw new IllegalArgumentException(
          "pools."
              + name
              + ".retryAfter: min "
              + retryAfterMin
              + " max "
              + retryAfterMax
              + " (expected: 0 <= min <= max)");
    }
    if (!(retryAfterJitter >= 0 && retryAfterJitter < 1)) {
      throw new IllegalArgumentException(
          "pools." + name + ".retryAfter.jitter: " + retryAfterJitter + " (expected: 0.0 .. <1.0)");
    }
    if (defaultServiceTime.isNegative() || defaultServiceTime.isZero()) {
      throw new IllegalArgumentException(
          "pools." + name + ".defaultServiceTime: " + defaultServiceTime + " (expected: > 0)");
    }
    if (holdMargin.isNegative()) {
      throw new IllegalArgumentException(
          "pools." + name + ".holdMargin: " + holdMargin + " (expected: >= 0)");
    }
  }

  /** A pool with default jitter (±20%) and hold margin (100 ms). */
  public static PoolPolicy of(
      String name,
      long capacityWorkUnits,
      int maxRequests,
      double inputWeight,
      double outputWeight,
      Duration retryAfterMin,
      Duration retryAfterMax,
      Duration maxMessageTimeout) {
    return new PoolPolicy(
        name,
        capacityWorkUnits,
        maxRequests,
        inputWeight,
        outputWeight,
        retryAfterMin,
        retryAfterMax,
        maxMessageTimeout,
        0.2,
        Duration.ofMillis(100),
        Duration.ofSeconds(2));
  }

  /** Work units of a request with the given token estimate. */
  public long workUnits(long inputTokens, long outputTokens) {
    double w = inputTokens * inputWeight + outputTokens * outputWeight;
    return Math.max(1L, (long) Math.ceil(w));
  }
}
