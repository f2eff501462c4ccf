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
 * @param queueDepth requests that may wait for the pool, all its classes together (0: no pool
 *     bound, the classes' own only); a tool pool (one an MCP tool rule names) defaults to its
 *     {@code maxRequests}
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
    EnginePriority enginePriority,
    int queueDepth) {

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
    if (queueDepth < 0) {
      throw new IllegalArgumentException(
          "pools." + name + ".queueDepth: " + queueDepth + " (expected: >= 0, 0 = no pool bound)");
    }
    if (holdMargin.isNegative()) {
      throw new IllegalArgumentException(
          "pools." + name + ".holdMargin: " + holdMargin + " (expected: >= 0)");
    }
  }

  /**
   * Pool {@code name} with {@code capacityWorkUnits} and every other setting at its default (what
   * the loader assumes for a key the YAML leaves out).
   */
  public static PoolPolicy defaults(String name, long capacityWorkUnits) {
    return builder(name, capacityWorkUnits).build();
  }

  /** A builder starting from {@link #defaults}. */
  public static Builder builder(String name, long capacityWorkUnits) {
    return new Builder(name, capacityWorkUnits);
  }

  /** A builder starting from this pool. */
  public Builder toBuilder() {
    return new Builder(name, capacityWorkUnits)
        .maxRequests(maxRequests)
        .inputWeight(inputWeight)
        .outputWeight(outputWeight)
        .retryAfter(retryAfterMin, retryAfterMax)
        .maxMessageTimeout(maxMessageTimeout)
        .retryAfterJitter(retryAfterJitter)
        .holdMargin(holdMargin)
        .defaultServiceTime(defaultServiceTime)
        .adaptive(adaptive)
        .fanout(fanout)
        .workflow(workflow)
        .enginePriority(enginePriority)
        .queueDepth(queueDepth);
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
        enginePriority,
        queueDepth);
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

  /** Builds a {@link PoolPolicy}; each setting starts at its default, shown beside it. */
  public static final class Builder {
    private final String name;
    private long capacityWorkUnits;
    private int maxRequests = 0;
    private double inputWeight = 1.0;
    private double outputWeight = 1.0;
    private Duration retryAfterMin = Duration.ofSeconds(1);
    private Duration retryAfterMax = Duration.ofSeconds(60);
    private Duration maxMessageTimeout = Duration.ZERO;
    private double retryAfterJitter = 0.2;
    private Duration holdMargin = Duration.ofMillis(100);
    private Duration defaultServiceTime = Duration.ofSeconds(2);
    private AdaptivePolicy adaptive = AdaptivePolicy.OFF;
    private FanOutPolicy fanout = FanOutPolicy.NONE;
    private WorkflowPolicy workflow = WorkflowPolicy.OFF;
    private EnginePriority enginePriority = EnginePriority.OFF;
    private int queueDepth = 0;

    private Builder(String name, long capacityWorkUnits) {
      this.name = name;
      this.capacityWorkUnits = capacityWorkUnits;
    }

    public Builder capacityWorkUnits(long v) {
      capacityWorkUnits = v;
      return this;
    }

    public Builder maxRequests(int v) {
      maxRequests = v;
      return this;
    }

    public Builder inputWeight(double v) {
      inputWeight = v;
      return this;
    }

    public Builder outputWeight(double v) {
      outputWeight = v;
      return this;
    }

    public Builder retryAfter(Duration min, Duration max) {
      retryAfterMin = min;
      retryAfterMax = max;
      return this;
    }

    public Builder maxMessageTimeout(Duration v) {
      maxMessageTimeout = v;
      return this;
    }

    public Builder retryAfterJitter(double v) {
      retryAfterJitter = v;
      return this;
    }

    public Builder holdMargin(Duration v) {
      holdMargin = v;
      return this;
    }

    public Builder defaultServiceTime(Duration v) {
      defaultServiceTime = v;
      return this;
    }

    public Builder adaptive(AdaptivePolicy v) {
      adaptive = v;
      return this;
    }

    public Builder fanout(FanOutPolicy v) {
      fanout = v;
      return this;
    }

    public Builder workflow(WorkflowPolicy v) {
      workflow = v;
      return this;
    }

    public Builder enginePriority(EnginePriority v) {
      enginePriority = v;
      return this;
    }

    public Builder queueDepth(int v) {
      queueDepth = v;
      return this;
    }

    public PoolPolicy build() {
      return new PoolPolicy(
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
          enginePriority,
          queueDepth);
    }
  }
}
