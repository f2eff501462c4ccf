package io.sluice.core.policy;

import java.time.Duration;
import java.util.Set;

/**
 * A pool's adaptive limit settings ({@code pools.<name>.adaptive}): the pool's capacity and request
 * cap become the ceiling, and the effective limit moves between the floor ({@code minCapacity},
 * {@code minRequests}) and that ceiling from the upstream's own signals (docs/scheduling.md,
 * "Adaptive capacity").
 *
 * @param enabled off: the pool's numbers are fixed (the default)
 * @param minCapacity the floor in work units
 * @param minRequests the floor in request slots (meaningful when the pool caps requests)
 * @param interval how often the latency rule runs (with at least {@code minSamples} samples)
 * @param minSamples latency samples an interval needs before the latency rule acts on it
 * @param growBelow latency ratio (recent ÷ no-load baseline) at or below which the limit may grow
 * @param shrinkAbove latency ratio above which the limit shrinks, towards {@code growBelow}
 * @param backoff multiplicative decrease on upstream overload (429/503/529), e.g. 0.7
 * @param maxPause the longest an upstream's Retry-After pauses new admission to the pool
 * @param baselineWindow how long a no-load latency baseline is remembered (the minimum over it)
 * @param overloadStatuses upstream statuses that mean "overloaded"
 * @param start where the limit starts when no learned limit exists (none in the shared store, no
 *     limit kept across a reload), as a fraction of the ceiling: {@link #START_CEILING} (1, the
 *     default), {@link #START_FLOOR} (0: clamped up to the floor), or any fraction in between
 *     (clamped into [floor, 1])
 */
public record AdaptivePolicy(
    boolean enabled,
    long minCapacity,
    int minRequests,
    Duration interval,
    int minSamples,
    double growBelow,
    double shrinkAbove,
    double backoff,
    Duration maxPause,
    Duration baselineWindow,
    Set<Integer> overloadStatuses,
    double start) {

  /** {@code start: ceiling}: a new limit starts at the configured ceiling (the default). */
  public static final double START_CEILING = 1.0;

  /** {@code start: floor}: a new limit starts at the floor. */
  public static final double START_FLOOR = 0.0;

  /** The same settings starting at {@code fraction} of the ceiling (0: the floor). */
  public AdaptivePolicy withStart(double fraction) {
    return new AdaptivePolicy(
        enabled,
        minCapacity,
        minRequests,
        interval,
        minSamples,
        growBelow,
        shrinkAbove,
        backoff,
        maxPause,
        baselineWindow,
        overloadStatuses,
        fraction);
  }

  /** Adaptive limits off: the pool's numbers are fixed; the other settings at their defaults. */
  public static final AdaptivePolicy OFF = new Builder(false, 1, 0).build();

  /**
   * An adaptive limit with floors {@code minCapacity} and {@code minRequests}, every other setting
   * at its default.
   */
  public static Builder builder(long minCapacity, int minRequests) {
    return new Builder(true, minCapacity, minRequests);
  }

  public AdaptivePolicy {
    overloadStatuses = Set.copyOf(overloadStatuses);
    String p = "adaptive.";
    if (minCapacity < 1) {
      throw new IllegalArgumentException(p + "minCapacity: " + minCapacity + " (expected: >= 1)");
    }
    if (minRequests < 0) {
      throw new IllegalArgumentException(p + "minRequests: " + minRequests + " (expected: >= 0)");
    }
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException(p + "interval: " + interval + " (expected: > 0)");
    }
    if (minSamples < 1) {
      throw new IllegalArgumentException(p + "minSamples: " + minSamples + " (expected: >= 1)");
    }
    if (!(growBelow >= 1.0 && shrinkAbove > growBelow)) {
      throw new IllegalArgumentException(
          p
              + "latency: growBelow "
              + growBelow
              + ", shrinkAbove "
              + shrinkAbove
              + " (expected: 1.0 <= growBelow < shrinkAbove)");
    }
    if (!(backoff > 0 && backoff < 1)) {
      throw new IllegalArgumentException(p + "backoff: " + backoff + " (expected: in (0, 1))");
    }
    if (maxPause.isNegative()) {
      throw new IllegalArgumentException(p + "maxPause: " + maxPause + " (expected: >= 0)");
    }
    if (!(start >= 0 && start <= 1)) {
      throw new IllegalArgumentException(
          p + "start: " + start + " (expected: ceiling, floor or a fraction in [0, 1])");
    }
    if (baselineWindow.compareTo(interval) <= 0) {
      throw new IllegalArgumentException(
          p
              + "latency.baselineWindow: "
              + baselineWindow
              + " (expected: > interval "
              + interval
              + ")");
    }
  }

  /** Whether {@code status} from the upstream means it is overloaded. */
  public boolean overload(int status) {
    return overloadStatuses.contains(status);
  }

  /** Builds an {@link AdaptivePolicy}; each setting starts at its default, shown beside it. */
  public static final class Builder {
    private final boolean enabled;
    private final long minCapacity;
    private final int minRequests;
    private Duration interval = Duration.ofSeconds(1);
    private int minSamples = 10;
    private double growBelow = 1.1;
    private double shrinkAbove = 1.3;
    private double backoff = 0.7;
    private Duration maxPause = Duration.ofSeconds(30);
    private Duration baselineWindow = Duration.ofMinutes(10);
    private Set<Integer> overloadStatuses = Set.of(429, 503, 529);
    private double start = START_CEILING;

    private Builder(boolean enabled, long minCapacity, int minRequests) {
      this.enabled = enabled;
      this.minCapacity = minCapacity;
      this.minRequests = minRequests;
    }

    public Builder interval(Duration v) {
      interval = v;
      return this;
    }

    public Builder minSamples(int v) {
      minSamples = v;
      return this;
    }

    /** The latency ratios at or below which the limit grows, and above which it shrinks. */
    public Builder latency(double growBelow, double shrinkAbove) {
      this.growBelow = growBelow;
      this.shrinkAbove = shrinkAbove;
      return this;
    }

    public Builder backoff(double v) {
      backoff = v;
      return this;
    }

    public Builder maxPause(Duration v) {
      maxPause = v;
      return this;
    }

    public Builder baselineWindow(Duration v) {
      baselineWindow = v;
      return this;
    }

    public Builder overloadStatuses(Set<Integer> v) {
      overloadStatuses = v;
      return this;
    }

    public Builder start(double fraction) {
      start = fraction;
      return this;
    }

    public AdaptivePolicy build() {
      return new AdaptivePolicy(
          enabled,
          minCapacity,
          minRequests,
          interval,
          minSamples,
          growBelow,
          shrinkAbove,
          backoff,
          maxPause,
          baselineWindow,
          overloadStatuses,
          start);
    }
  }
}
