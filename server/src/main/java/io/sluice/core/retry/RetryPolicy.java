package io.sluice.core.retry;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code retries} section of the policy (docs/configuration.md, "Retries"). Immutable; one per
 * config snapshot.
 *
 * @param enabled classify attempts, count them, and apply the budget and duplicate rules; off: no
 *     signal is read for retries and nothing is refused for them
 * @param window an operation id seen again within this (sliding: every attempt renews it) makes the
 *     request a retry; also how long a refusal is remembered past its Retry-After, and how long an
 *     idle budget bucket is kept (it comes back full)
 * @param maxEntries the bound of every in-process map (operations seen, in flight, refusals,
 *     buckets); the least recently used entry goes first
 * @param budget the retry budget
 * @param earlyRetry what happens to a retry that comes back before the Retry-After it was given
 * @param duplicates what happens to an operation already in flight, or completed recently
 */
public record RetryPolicy(
    boolean enabled,
    Duration window,
    int maxEntries,
    Budget budget,
    EarlyRetry earlyRetry,
    Duplicates duplicates) {
  public RetryPolicy {
    Objects.requireNonNull(window, "window");
    Objects.requireNonNull(budget, "budget");
    Objects.requireNonNull(earlyRetry, "earlyRetry");
    Objects.requireNonNull(duplicates, "duplicates");
  }

  /**
   * The defaults of the embedded policy: on, budget on, duplicates refused, early retries count.
   */
  public static final RetryPolicy DEFAULTS =
      new RetryPolicy(
          true,
          Duration.ofMinutes(1),
          100_000,
          new Budget(true, Budget.Scope.TENANT, 10, 0.1),
          EarlyRetry.COUNT,
          new Duplicates(
              Duplicates.Action.REFUSE, Duration.ZERO, Duration.ofMinutes(10), Map.of()));

  /** Nothing read, nothing refused. */
  public static final RetryPolicy OFF =
      new RetryPolicy(
          false,
          DEFAULTS.window,
          DEFAULTS.maxEntries,
          DEFAULTS.budget,
          DEFAULTS.earlyRetry,
          DEFAULTS.duplicates);

  /**
   * gRPC retry throttling's token bucket (gRFC A6), per tenant and pool ({@link Scope#TENANT}) or
   * per pool: it starts full at {@code maxTokens}; an original adds {@code tokenRatio} (up to
   * {@code maxTokens}); a retry is admitted only while the bucket holds more than {@code maxTokens
   * / 2}, and then costs 1. Refused requests change nothing.
   */
  public record Budget(boolean enabled, Scope scope, double maxTokens, double tokenRatio) {
    /** Whose bucket a request draws on. */
    public enum Scope {
      /** One bucket per tenant in each pool. */
      TENANT,
      /** One bucket per pool, every tenant together. */
      POOL;

      public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
      }
    }

    public double threshold() {
      return maxTokens / 2;
    }
  }

  /**
   * A retry that comes back before its Retry-After: counted only, or refused {@code early_retry}.
   */
  public enum EarlyRetry {
    COUNT,
    REFUSE;

    public String configName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Duplicate operations (an operation id already in flight or queued, on any replica of the
   * store).
   *
   * @param inFlight refuse a second attempt while the first runs (409 {@code duplicate_operation}),
   *     or admit it
   * @param replayWindow after an operation completed, a new attempt within this is refused as a
   *     replay (0: off)
   * @param maxInFlight how long an in-flight claim lives at most (a replica that died without
   *     releasing it stops blocking the operation after this)
   * @param routes per-route overrides of {@code inFlight} and {@code replayWindow}, by route name
   */
  public record Duplicates(
      Action inFlight, Duration replayWindow, Duration maxInFlight, Map<String, Route> routes) {
    public Duplicates {
      routes = Map.copyOf(routes);
    }

    /** {@code refuse} or {@code admit}. */
    public enum Action {
      REFUSE,
      ADMIT;

      public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
      }
    }

    /** A route's own duplicate rule. */
    public record Route(Action inFlight, Duration replayWindow) {}

    /** The rule of {@code route}: its override, else the section's. */
    public Route forRoute(String route) {
      Route r = routes.get(route);
      return r != null ? r : new Route(inFlight, replayWindow);
    }
  }
}
