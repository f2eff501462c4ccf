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
 * @param adaptive the adaptive limit ({@link AdaptivePolicy#OFF}: {@code capacity} and {@code
 *     maxRequests} are fixed; on: they are the ceiling the learned limit moves under)
 * @param fanout the work a request's tools and declared downstream calls add ({@link
 *     FanOutPolicy#NONE}: none)
 * @param workflow what one workflow may hold of the pool at once ({@link WorkflowPolicy#OFF}: no
 *     budget)
 * @param enginePriority the engine priority written into admitted requests ({@link
 *     EnginePriority#OFF}: none)
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
    Duration defaultServiceTime,
    AdaptivePolicy adaptive,
    FanOutPolicy fanout,
    WorkflowPolicy workflow,
    EnginePriority enginePriority) {

  /** A pool that writes no engine priority. */
  public PoolPolicy(
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
      Duration defaultServiceTime,
      AdaptivePolicy adaptive,
      FanOutPolicy fanout,
      WorkflowPolicy workflow) {
    this(
        name,
        capacityWorkUnits,
        maxRequests,
        inputWeight,
        outputWeight,
        retryAfterMin,
        retryAfterMax,
        maxMessageTimeout,
        retryAfterJitter,
        holdMargin,
        defaultServiceTime,
        adaptive,
        fanout,
        workflow,
        EnginePriority.OFF);
  }

  /** A pool without fan-out pricing or workflow budget. */
  public PoolPolicy(
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
      Duration defaultServiceTime,
      AdaptivePolicy adaptive) {
    this(
        name,
        capacityWorkUnits,
        maxRequests,
        inputWeight,
        outputWeight,
        retryAfterMin,
        retryAfterMax,
        maxMessageTimeout,
        retryAfterJitter,
        holdMargin,
        defaultServiceTime,
        adaptive,
        FanOutPolicy.NONE,
        WorkflowPolicy.OFF);
  }

  /** A pool with fixed numbers (no adaptive limit). */
  public PoolPolicy(
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
    this(
        name,
        capacityWorkUnits,
        maxRequests,
        inputWeight,
        outputWeight,
        retryAfterMin,
        retryAfterMax,
        maxMessageTimeout,
        retryAfterJitter,
        holdMargin,
        defaultServiceTime,
        AdaptivePolicy.OFF);
  }

  public PoolPolicy {
    Objects.requireNonNull(adaptive, "adaptive");
    Objects.requireNonNull(fanout, "fanout");
    Objects.requireNonNull(workflow, "workflow");
    Objects.requireNonNull(enginePriority, "enginePriority");
    if (adaptive.enabled()) {
      if (adaptive.minCapacity() > capacityWorkUnits) {
        throw new IllegalArgumentException(
            "pools."
                + name
                + ".adaptive.minCapacity: "
                + adaptive.minCapacity()
                + " (expected: <= capacity "
                + capacityWorkUnits
                + ", the ceiling)");
      }
      if (maxRequests > 0 && adaptive.minRequests() > maxRequests) {
        throw new IllegalArgumentException(
            "pools."
                + name
                + ".adaptive.minRequests: "
                + adaptive.minRequests()
                + " (expected: <= maxRequests "
                + maxRequests
                + ", the ceiling)");
      }
    }
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

  /**
   * This pool with {@code work} units and {@code requests} slots in place of its own numbers (the
   * effective limit of an adaptive pool, as fixed numbers: the adaptive settings are left out).
   */
  public PoolPolicy withLimits(long work, int requests) {
    return new PoolPolicy(
        name,
        work,
        requests,
        inputWeight,
        outputWeight,
        retryAfterMin,
        retryAfterMax,
        maxMessageTimeout,
        retryAfterJitter,
        holdMargin,
        defaultServiceTime,
        AdaptivePolicy.OFF,
        fanout,
        workflow,
        enginePriority);
  }

  /** Work units of a request with the given token estimate plus its fan-out work (saturating). */
  public long workUnits(long inputTokens, long outputTokens, long fanOutWork) {
    long w = workUnits(inputTokens, outputTokens);
    long sum = w + Math.max(0, fanOutWork);
    return sum < 0 ? Long.MAX_VALUE : sum;
  }

  /** Work units of a request with the given token estimate. */
  public long workUnits(long inputTokens, long outputTokens) {
    double w = inputTokens * inputWeight + outputTokens * outputWeight;
    return Math.max(1L, (long) Math.ceil(w));
  }
}
