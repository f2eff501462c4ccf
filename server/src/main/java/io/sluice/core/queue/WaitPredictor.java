package io.sluice.core.queue;

import java.util.Objects;

/**
 * Predicts queue waits and service times of one pool from what it recently finished.
 *
 * <p><b>Completion rate</b> (work units per second): an exponentially time-decayed average fed by
 * {@link #onCompletion}. With {@code tau = halfLife / ln 2}, every completion decays the work sum
 * {@code S} and the observed-time weight {@code E} by {@code d = 2^(-dt/halfLife)} and adds its
 * work to {@code S} and {@code tau * (1 - d)} to {@code E}; the rate is {@code S / E} (the usual
 * EWMA, corrected for a window that is not yet full). The first completion only starts the window.
 * The measured rate is used once {@code E >= halfLife / 4}.
 *
 * <p><b>No samples yet, and floor.</b> Until then, and as a floor afterwards, the predictor assumes
 * the pool's full capacity drains over {@code defaultServiceNanos}: rate {@code capacity /
 * defaultService}. The floor keeps an idle spell (no completions, so the measured rate decays) from
 * making the first queued request after it look unreachable; set {@code defaultServiceNanos} to a
 * pessimistic service time of the pool.
 *
 * <p><b>Request slots.</b> A pool may also cap concurrent requests ({@code maxRequests > 0}); then
 * the predictor keeps the same decayed average of completions counted in requests (rate {@code C /
 * E}, floor {@code maxRequests / defaultService}) and every prediction is the larger of the two
 * dimensions: whichever binds decides the wait. With no request cap the request side is off.
 *
 * <p><b>Service time</b>: {@link #onServiceTime} keeps decayed sums of service nanos and work units
 * (each sample's weight halves every {@code serviceHalfLifeSamples} samples); {@code
 * expectedServiceNanos(w) = w * sumNanos / sumWork}. With no samples it is {@code
 * defaultServiceNanos}.
 *
 * <p><b>Concurrency.</b> Not thread-safe; owned by the pool's admission controller. No clock: time
 * is an argument.
 */
public final class WaitPredictor {

  /**
   * Predictor settings.
   *
   * @param capacityWorkUnits pool capacity in work units in flight (for the default rate)
   * @param halfLifeNanos half-life of the completion-rate average
   * @param defaultServiceNanos assumed service time before samples; the full capacity drains over
   *     it (the rate floor)
   * @param serviceHalfLifeSamples half-life, in samples, of the service-time average
   * @param maxRequests the pool's cap on concurrent requests, 0 = none (predict on work units only)
   */
  public record Config(
      long capacityWorkUnits,
      long halfLifeNanos,
      long defaultServiceNanos,
      int serviceHalfLifeSamples,
      int maxRequests) {

    public Config {
      if (maxRequests < 0) {
        throw new IllegalArgumentException("maxRequests: " + maxRequests + " (expected: >= 0)");
      }
      if (capacityWorkUnits <= 0) {
        throw new IllegalArgumentException(
            "capacityWorkUnits: " + capacityWorkUnits + " (expected: > 0)");
      }
      if (halfLifeNanos <= 0) {
        throw new IllegalArgumentException("halfLifeNanos: " + halfLifeNanos + " (expected: > 0)");
      }
      if (defaultServiceNanos <= 0) {
        throw new IllegalArgumentException(
            "defaultServiceNanos: " + defaultServiceNanos + " (expected: > 0)");
      }
      if (serviceHalfLifeSamples <= 0) {
        throw new IllegalArgumentException(
            "serviceHalfLifeSamples: " + serviceHalfLifeSamples + " (expected: > 0)");
      }
    }
  }

  private static final double LN2 = Math.log(2);

  private final Config config;
  private final double tauNanos;
  private final double floorRatePerNano;
  private final double floorRequestRatePerNano;
  private final double serviceDecay;

  private boolean started;
  private long lastCompletionNanos;
  private double decayedWork;
  private double decayedTimeNanos;
  private double decayedRequests;

  private double decayedServiceNanos;
  private double decayedServiceWork;

  public WaitPredictor(Config config) {
    this.config = Objects.requireNonNull(config, "config");
    this.tauNanos = config.halfLifeNanos() / LN2;
    this.floorRatePerNano = (double) config.capacityWorkUnits() / config.defaultServiceNanos();
    this.floorRequestRatePerNano = (double) config.maxRequests() / config.defaultServiceNanos();
    this.serviceDecay = Math.pow(0.5, 1.0 / config.serviceHalfLifeSamples());
  }

  public Config config() {
    return config;
  }

  /** A request that held {@code workUnits} finished (released its permit) at {@code nowNanos}. */
  public void onCompletion(long workUnits, long nowNanos) {
    if (workUnits < 0) {
      throw new IllegalArgumentException("workUnits: " + workUnits + " (expected: >= 0)");
    }
    if (!started) {
      started = true;
      lastCompletionNanos = nowNanos;
      return;
    }
    long dt = Math.max(0, nowNanos - lastCompletionNanos);
    lastCompletionNanos = nowNanos;
    double d = Math.pow(0.5, (double) dt / config.halfLifeNanos());
    decayedWork = decayedWork * d + workUnits;
    decayedRequests = decayedRequests * d + 1;
    decayedTimeNanos = decayedTimeNanos * d + tauNanos * (1 - d);
  }

  /** A request of {@code workUnits} took {@code serviceNanos} from start to response end. */
  public void onServiceTime(long workUnits, long serviceNanos) {
    if (workUnits <= 0 || serviceNanos < 0) {
      return;
    }
    decayedServiceNanos = decayedServiceNanos * serviceDecay + serviceNanos;
    decayedServiceWork = decayedServiceWork * serviceDecay + workUnits;
  }

  /** The measured completion rate, or NaN while the window is shorter than a quarter half-life. */
  public double measuredWorkUnitsPerSecond() {
    if (decayedTimeNanos < config.halfLifeNanos() / 4.0) {
      return Double.NaN;
    }
    return decayedWork / decayedTimeNanos * 1e9;
  }

  /** The drain rate used for predictions: measured, but never below the default (floor). */
  public double workUnitsPerSecond() {
    return ratePerNano() * 1e9;
  }

  private double ratePerNano() {
    double measured = measuredWorkUnitsPerSecond() / 1e9;
    return Double.isNaN(measured) ? floorRatePerNano : Math.max(measured, floorRatePerNano);
  }

  /**
   * Requests completed per second used for predictions: measured, but never below {@code
   * maxRequests / defaultService}; 0 when the pool caps no requests.
   */
  public double requestsPerSecond() {
    return requestRatePerNano() * 1e9;
  }

  private double requestRatePerNano() {
    if (config.maxRequests() <= 0) {
      return 0;
    }
    if (decayedTimeNanos < config.halfLifeNanos() / 4.0) {
      return floorRequestRatePerNano;
    }
    return Math.max(decayedRequests / decayedTimeNanos, floorRequestRatePerNano);
  }

  /** True once at least one service time was observed ({@link #onServiceTime}). */
  public boolean hasServiceSamples() {
    return decayedServiceWork > 0;
  }

  /** Expected service time of a request of {@code workUnits}. */
  public long expectedServiceNanos(long workUnits) {
    if (decayedServiceWork <= 0) {
      return config.defaultServiceNanos();
    }
    return Saturating.nanos(workUnits * (decayedServiceNanos / decayedServiceWork));
  }

  /**
   * Predicted wait before a request can start: {@code max(0, queuedWorkAhead + workUnits -
   * capacityFreeNow) / rate}. The request starts once the work ahead of it and its own work fit
   * into capacity freed by completions.
   */
  public long predictWaitNanos(long queuedWorkAhead, long workUnits, long capacityFreeNow) {
    double need = (double) queuedWorkAhead + workUnits - capacityFreeNow;
    return need <= 0 ? 0 : Saturating.nanos(need / ratePerNano());
  }

  /**
   * Predicted wait on both dimensions: the larger of {@link #predictWaitNanos(long, long, long)}
   * and, when the pool caps requests, {@code max(0, requestsAhead + 1 - freeSlotsNow) /
   * requestRate}: the request starts once the requests ahead of it and itself have slots.
   */
  public long predictWaitNanos(
      long queuedWorkAhead,
      long workUnits,
      long capacityFreeNow,
      long requestsAhead,
      long requestSlotsFreeNow) {
    long byWork = predictWaitNanos(queuedWorkAhead, workUnits, capacityFreeNow);
    if (config.maxRequests() <= 0) {
      return byWork;
    }
    double need = (double) requestsAhead + 1 - requestSlotsFreeNow;
    long bySlots = need <= 0 ? 0 : Saturating.nanos(need / requestRatePerNano());
    return Math.max(byWork, bySlots);
  }

  /** As {@link #predictWaitNanos(long, long, long)} without the request's own work. */
  public long predictWaitNanos(long queuedWorkAhead, long capacityFreeNow) {
    return predictWaitNanos(queuedWorkAhead, 0, capacityFreeNow);
  }

  /** Time for completions to drain {@code queuedWork} (the basis of a 503 Retry-After). */
  public long predictedDrainNanos(long queuedWork) {
    return queuedWork <= 0 ? 0 : Saturating.nanos(queuedWork / ratePerNano());
  }

  /**
   * Time for completions to drain {@code queuedWork} units and {@code requests} requests: the
   * larger of the two when the pool caps requests, else the work alone.
   */
  public long predictedDrainNanos(long queuedWork, long requests) {
    long byWork = predictedDrainNanos(queuedWork);
    if (config.maxRequests() <= 0 || requests <= 0) {
      return byWork;
    }
    return Math.max(byWork, Saturating.nanos(requests / requestRatePerNano()));
  }

  /**
   * How long a request arriving at {@code nowNanos} may wait and still be worth starting: {@code
   * min(maxWait, (deadline - now) - expectedService)}. Negative when the deadline is already out of
   * reach.
   */
  public static long startBudgetNanos(
      long nowNanos, long deadlineNanos, long maxWaitNanos, long expectedServiceNanos) {
    long remaining = Saturating.sub(deadlineNanos, nowNanos);
    return Math.min(maxWaitNanos, Saturating.sub(remaining, expectedServiceNanos));
  }

  /**
   * Decision rule 3: a request is feasible when it can start within {@code min(class max wait,
   * remaining deadline - expected service)}, i.e. {@code predictedWait <= startBudget}. When false,
   * reject now (503 {@code deadline_unreachable}, Retry-After from {@link #predictedDrainNanos}).
   */
  public static boolean feasible(
      long nowNanos,
      long deadlineNanos,
      long maxWaitNanos,
      long predictedWaitNanos,
      long expectedServiceNanos) {
    long budget = startBudgetNanos(nowNanos, deadlineNanos, maxWaitNanos, expectedServiceNanos);
    return budget >= 0 && predictedWaitNanos <= budget;
  }
}
