package io.sluice.core.budget;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

/** Budgets the tests share: one daily token budget for every tenant of tier {@code pro}. */
public final class TestBudgets {
  private TestBudgets() {}

  /** A calendar day in UTC. */
  public static final Period DAY =
      new Period.Calendar(Period.Unit.DAY, ZoneOffset.UTC, DayOfWeek.MONDAY);

  /**
   * Budgets on: tier {@code pro} has {@code daily}, {@code limit} tokens a day (no threshold, no
   * pacing); 402, 5 s of wait, 1000 entries, local share 0.1; {@code degrade} as given.
   */
  public static BudgetPolicy dailyPro(long limit, BudgetPolicy.Degrade degrade) {
    return dailyPro(Budget.Meter.TOKENS, limit, Prices.NONE, degrade);
  }

  /**
   * As above, {@code daily} counting {@code meter} ({@code limit} in its units: money in
   * nano-units) with the price table {@code prices}.
   */
  public static BudgetPolicy dailyPro(
      Budget.Meter meter, long limit, Prices prices, BudgetPolicy.Degrade degrade) {
    return dailyPro(meter, limit, List.of(), prices, degrade);
  }

  /** {@code limit} tokens a day for tier {@code pro}, announcing {@code thresholds}. */
  public static BudgetPolicy dailyPro(long limit, List<Double> thresholds) {
    return dailyPro(Budget.Meter.TOKENS, limit, thresholds, Prices.NONE, BudgetPolicy.Degrade.OFF);
  }

  private static BudgetPolicy dailyPro(
      Budget.Meter meter,
      long limit,
      List<Double> thresholds,
      Prices prices,
      BudgetPolicy.Degrade degrade) {
    Budget daily = new Budget("daily", meter, DAY, new Terms(limit, thresholds, 0), null);
    return new BudgetPolicy(
        true,
        402,
        Duration.ofSeconds(5),
        1000,
        null,
        0.1,
        prices,
        Map.of("pro", List.of(daily)),
        Map.of(),
        Map.of(),
        Map.of(),
        List.of(),
        degrade);
  }
}
