package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetPolicy;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The budgets' meters (docs/metrics.md, "Budgets"). Labels are bounded by the policy: a budget's
 * name, its scope and group (a tier, a route, a model group, {@code deployment}), the meter, a
 * threshold, a reason code; never a tenant id. One per process ({@link AdmissionMetrics#part});
 * thread-safe.
 */
public final class BudgetMetrics implements BudgetEvents {
  /**
   * Units spent (charged at the end), by budget, scope, group and meter (money: currency units).
   */
  public static final String SPENT = "sluice.budget.spent";

  /** Units reserved at admission, as above. */
  public static final String RESERVED = "sluice.budget.reserved";

  /**
   * Units given back by reservations cut to their request's cheaper run (a degrade rung), as {@link
   * #RESERVED}.
   */
  public static final String CUT = "sluice.budget.cut";

  /** Requests refused by a budget, by budget, scope, group and reason. */
  public static final String REFUSALS = "sluice.budget.refusals";

  /** Soft thresholds first reached in a window (once per window and budget owner). */
  public static final String THRESHOLD_CROSSINGS = "sluice.budget.threshold.crossings";

  /** Admitted requests told they are past a soft threshold (disclosure headers). */
  public static final String DISCLOSED = "sluice.budget.disclosed";

  /** Times a request waited for a budget, by cause ({@code pace}, {@code reservations}). */
  public static final String WAITS = "sluice.budget.waits";

  /**
   * The budget store did not answer, by what the failure mode did ({@code allowed}, {@code
   * refused}).
   */
  public static final String STORE_FAILURES = "sluice.budget.store.failures";

  /**
   * Units counted while the store did not answer, by what became of them ({@code written} to the
   * store once it answered again, {@code dropped}: too many budgets owed), as {@link #SPENT}.
   */
  public static final String WRITE_BACK = "sluice.budget.write.back";

  /**
   * Reservations this replica owes the shared budget store (their spend or settle not written yet:
   * the store did not answer), by budget, scope and group; 0 once written.
   */
  public static final String WRITE_BACK_OWED = "sluice.budget.write.back.owed";

  /**
   * Reservations taken on the local share while the store did not answer (failure mode {@code
   * local}), by budget, scope, group and {@code basis}: {@code remaining} (a share of what the
   * store last said remains in the window) or {@code limit} (a share of the limit: the store never
   * answered for that budget in the window).
   */
  public static final String LOCAL_RESERVES = "sluice.budget.local.reserves";

  /**
   * The local share's allowance of the latest such reservation (the most a replica may reserve in
   * the window while the store does not answer), by budget, scope and group, as {@link #SPENT}.
   */
  public static final String LOCAL_ALLOWANCE = "sluice.budget.local.allowance";

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> owed = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> allowances = new ConcurrentHashMap<>();

  /** The process's budget meters (one per registry: {@code AdmissionMetrics.part}). */
  public BudgetMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  @Override
  public void settled(BudgetPolicy.Applied a, long reserved, long actual) {
    counter(SPENT, a, "meter", a.budget().meter().label()).increment(amount(a, actual));
  }

  /** A reservation taken. */
  public void reserved(BudgetPolicy.Applied a, long units) {
    counter(RESERVED, a, "meter", a.budget().meter().label()).increment(amount(a, units));
  }

  @Override
  public void shrunk(BudgetPolicy.Applied a, long units) {
    counter(CUT, a, "meter", a.budget().meter().label()).increment(amount(a, units));
  }

  @Override
  public void crossed(BudgetPolicy.Applied a, double threshold) {
    counter(THRESHOLD_CROSSINGS, a, "threshold", String.format(Locale.ROOT, "%.2f", threshold))
        .increment();
  }

  @Override
  public void waited(BudgetPolicy.Applied a, boolean pacing, long millis) {
    counter(WAITS, a, "cause", pacing ? "pace" : "reservations").increment();
  }

  @Override
  public void storeFailed(BudgetPolicy.Applied a, boolean allowed) {
    counter(STORE_FAILURES, a, "outcome", allowed ? "allowed" : "refused").increment();
  }

  @Override
  public void writeBack(BudgetPolicy.Applied a, long units, boolean written) {
    counter(WRITE_BACK, a, "outcome", written ? "written" : "dropped").increment(amount(a, units));
  }

  @Override
  public void owed(BudgetPolicy.Applied a, int delta) {
    gauge(owed, WRITE_BACK_OWED, a, 1).addAndGet(delta);
  }

  @Override
  public void localAllowance(BudgetPolicy.Applied a, long units, boolean ofRemaining) {
    counter(LOCAL_RESERVES, a, "basis", ofRemaining ? "remaining" : "limit").increment();
    gauge(allowances, LOCAL_ALLOWANCE, a, amount(a, 1)).set(units);
  }

  /** {@code a}'s gauge of {@code name} in {@code gauges}, its value scaled by {@code scale}. */
  private AtomicLong gauge(
      ConcurrentMap<String, AtomicLong> gauges, String name, BudgetPolicy.Applied a, double scale) {
    String budget = a.budget().name();
    String scope = a.scope().label();
    String group = a.group();
    return gauges.computeIfAbsent(
        budget + '\0' + scope + '\0' + group,
        k -> {
          AtomicLong n = new AtomicLong();
          Gauge.builder(name, n, v -> v.get() * scale)
              .tags("budget", budget, "scope", scope, "group", group)
              .register(registry);
          return n;
        });
  }

  /** A request refused by budget {@code a} with {@code reason}. */
  public void refused(BudgetPolicy.Applied a, String reason) {
    counter(REFUSALS, a, "reason", reason).increment();
  }

  /** An admitted request told it is past a soft threshold of {@code a}. */
  public void disclosed(BudgetPolicy.Applied a) {
    counter(DISCLOSED, a, "meter", a.budget().meter().label()).increment();
  }

  private static double amount(BudgetPolicy.Applied a, long units) {
    return a.budget().meter().priced() ? units / 1e9 : units;
  }

  private Counter counter(String name, BudgetPolicy.Applied a, String key, String value) {
    String budget = a.budget().name();
    String scope = a.scope().label();
    String group = a.group();
    String k = name + '\0' + budget + '\0' + scope + '\0' + group + '\0' + value;
    return counters.computeIfAbsent(
        k,
        x ->
            Counter.builder(name)
                .tags("budget", budget, "scope", scope, "group", group, key, value)
                .register(registry));
  }
}
