package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.permit.PermitDesk;
import io.sluice.core.permit.PermitEvents;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The permit API's meters (docs/metrics.md, "Permits"): acquires by pool and result, the time a
 * granted or refused acquire waited in its pool's queue, the permits held at this replica, how
 * leases ended (released here, released at another replica, released after expiry, expired) and the
 * work callers reported at release. The label {@code pool} is bounded: a configured pool's name, or
 * "" for an acquire naming none; {@code result} and {@code how} are enums. Fed by the {@link
 * PermitDesk} ({@link PermitEvents}); thread-safe.
 */
public final class PermitMetrics implements PermitEvents {
  /** Acquires by pool and result (granted, queued_then_granted, refused, invalid, ...). */
  public static final String ACQUIRES = "sluice.permit.acquires";

  /** Time an acquire waited in its pool's queue (0 when answered at once), by pool. */
  public static final String WAIT = "sluice.permit.wait";

  /** Permits held at this replica now. */
  public static final String HELD = "sluice.permit.held";

  /** Leases that ran out (the caller stopped renewing), by pool. */
  public static final String EXPIRIES = "sluice.permit.lease.expiries";

  /**
   * Leases released, by pool and where ({@code here}, {@code elsewhere}: another replica, {@code
   * after_expiry}: here, after the lease ran out in the store).
   */
  public static final String RELEASES = "sluice.permit.releases";

  /** Work units callers reported at release, by pool, at the replica that got the release. */
  public static final String ACTUAL_WORK = "sluice.permit.actual.work";

  private static final Duration[] BUCKETS = {
    Duration.ofMillis(1),
    Duration.ofMillis(5),
    Duration.ofMillis(25),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofSeconds(1),
    Duration.ofSeconds(5),
    Duration.ofSeconds(30)
  };

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Timer> waits = new ConcurrentHashMap<>();

  public PermitMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Binds the held gauge to {@code held} (the desk's leases). */
  public PermitMetrics held(IntSupplier held) {
    Gauge.builder(HELD, held, IntSupplier::getAsInt)
        .description("Permits of the permit API held at this replica")
        .register(registry);
    return this;
  }

  @Override
  public void acquired(String pool, PermitDesk.Answer.Kind kind, long waitedNanos) {
    String result = kind.name().toLowerCase(Locale.ROOT);
    count(ACQUIRES, pool, "result", result, "Permit acquires by pool and result");
    if (kind == PermitDesk.Answer.Kind.GRANTED
        || kind == PermitDesk.Answer.Kind.QUEUED_THEN_GRANTED
        || kind == PermitDesk.Answer.Kind.REFUSED) {
      waits
          .computeIfAbsent(
              pool,
              p ->
                  Timer.builder(WAIT)
                      .tags("pool", p)
                      .description("Time permit acquires waited in their pool's queue")
                      .serviceLevelObjectives(BUCKETS)
                      .register(registry))
          .record(Math.max(0, waitedNanos), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void ended(String pool, End how) {
    switch (how) {
      case EXPIRED -> count(EXPIRIES, pool, null, null, "Permit leases that ran out");
      case RELEASED -> count(RELEASES, pool, "where", "here", "Permit leases released");
      case RELEASED_ELSEWHERE ->
          count(RELEASES, pool, "where", "elsewhere", "Permit leases released");
      case RELEASED_AFTER_EXPIRY ->
          count(RELEASES, pool, "where", "after_expiry", "Permit leases released");
    }
  }

  @Override
  public void work(String pool, long actualWork) {
    if (actualWork > 0) {
      counter(ACTUAL_WORK, pool, null, null, "Work units reported at permit releases")
          .increment(actualWork);
    }
  }

  private void count(
      String name, String pool, @Nullable String key, @Nullable String value, String help) {
    counter(name, pool, key, value, help).increment();
  }

  private Counter counter(
      String name, String pool, @Nullable String key, @Nullable String value, String help) {
    return counters.computeIfAbsent(
        name + '\0' + pool + '\0' + value,
        k -> {
          Counter.Builder b = Counter.builder(name).tag("pool", pool).description(help);
          if (key != null && value != null) {
            b.tag(key, value);
          }
          return b.register(registry);
        });
  }
}
