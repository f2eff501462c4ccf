package io.sluice.core.budget;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code budgets} section (docs/configuration.md, "Budgets"): budgets per tenant (through its
 * tier, replaced per tenant), per route, per model group and for the whole Deployment; the price
 * table; what a spent budget answers.
 *
 * @param enabled whether budgets are enforced (off: the check is left out of the chain)
 * @param refusalStatus the status of a {@code budget_exhausted} refusal: 402, 422 or 429
 * @param maxWait how long a request may wait for the pace or for running requests to settle
 * @param maxEntries the in-process store's bound (budget keys)
 * @param failureMode what a store outage does; null: as {@code quotas.failureMode}
 * @param localShare failure mode {@code local}: the share of each budget's remaining budget (what
 *     the store last said remains in the window, else of its limit) this replica may reserve while
 *     the store does not answer ({@link LastRemaining})
 * @param prices the price table (money budgets)
 * @param tiers budgets of each tenant of a tier, by tier name
 * @param tenants a tenant's own budgets, replacing its tier's, by tenant id
 * @param routes budgets of a route, by route name
 * @param modelGroups budgets of a group of models, by group name
 * @param deployment budgets of the whole Deployment
 * @param degrade when a request near a budget's end is run a cheaper way first (its class's degrade
 *     ladder), and by which rung
 */
public record BudgetPolicy(
    boolean enabled,
    int refusalStatus,
    Duration maxWait,
    int maxEntries,
    BudgetBook.@Nullable FailureMode failureMode,
    double localShare,
    Prices prices,
    Map<String, List<Budget>> tiers,
    Map<String, List<Budget>> tenants,
    Map<String, List<Budget>> routes,
    Map<String, ModelGroup> modelGroups,
    List<Budget> deployment,
    Degrade degrade) {

  /**
   * The budget degrade rung: a request whose reservation leaves a budget at or past {@code at} of
   * its limit used asks its class's degrade ladder to run it a cheaper way before its pool decides
   * ({@code budgets.degradeAt}, {@code budgets.degradeRung}); a budget may set its own level
   * ({@link Budget#degradeAt}).
   *
   * @param at the share of a limit used from which requests are degraded (0: never), for the
   *     budgets that set no level of their own
   * @param rung the rung to try (a rung's name in the class's ladder), or null: each, in order
   */
  public record Degrade(double at, @Nullable String rung) {
    /** Never. */
    public static final Degrade OFF = new Degrade(0, null);

    /** Whether {@code used} (a share of a limit) asks for the degrade rung. */
    public boolean asks(double used) {
      return at > 0 && used >= at;
    }

    /**
     * Whether {@code used} of budget {@code b}'s limit asks for it (its own level, or this one).
     */
    public boolean asks(Budget b, double used) {
      Double own = b.degradeAt();
      return own == null ? asks(used) : own > 0 && used >= own;
    }
  }

  public static final BudgetPolicy DEFAULTS =
      new BudgetPolicy(
          false,
          402,
          Duration.ofSeconds(5),
          100_000,
          null,
          0.1,
          Prices.NONE,
          Map.of(),
          Map.of(),
          Map.of(),
          Map.of(),
          List.of(),
          Degrade.OFF);

  public BudgetPolicy {
    Objects.requireNonNull(degrade, "degrade");
    Objects.requireNonNull(maxWait, "maxWait");
    Objects.requireNonNull(prices, "prices");
    tiers = Map.copyOf(tiers);
    tenants = Map.copyOf(tenants);
    routes = Map.copyOf(routes);
    modelGroups = Map.copyOf(modelGroups);
    deployment = List.copyOf(deployment);
  }

  /** The statuses a {@code budget_exhausted} refusal may have (never a 503). */
  public static final Set<Integer> REFUSAL_STATUSES = Set.of(402, 422, 429);

  /** A group of models sharing budgets. */
  public record ModelGroup(Set<String> models, List<Budget> budgets) {
    public ModelGroup {
      models = Set.copyOf(models);
      budgets = List.copyOf(budgets);
    }
  }

  /** Where a budget applies. */
  public enum Scope {
    TENANT,
    ROUTE,
    MODEL_GROUP,
    DEPLOYMENT;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One budget as it applies to a request.
   *
   * @param budget the budget
   * @param scope where it applies
   * @param owner whose budget: the tenant id, the route, the group; {@code ""} for the Deployment
   * @param group the bounded label of its owner for metrics: the tier, the route, the group, {@code
   *     deployment} (never a tenant id)
   */
  public record Applied(Budget budget, Scope scope, String owner, String group) {
    /** The store key under {@code prefix}: one per budget and owner; a hash tag for the Cluster. */
    public String key(String prefix) {
      return prefix + "budget:{" + scope.label() + ":" + owner + ":" + budget.name() + "}";
    }
  }

  /** Whether any budget is configured. */
  public boolean any() {
    return !tiers.isEmpty()
        || !tenants.isEmpty()
        || !routes.isEmpty()
        || !modelGroups.isEmpty()
        || !deployment.isEmpty();
  }

  /** Whether a request of {@code tenant} in {@code tier} on {@code route} has any budget. */
  public boolean applies(String tenant, String tier, String route) {
    return tenants.containsKey(tenant)
        || tiers.containsKey(tier)
        || routes.containsKey(route)
        || !modelGroups.isEmpty()
        || !deployment.isEmpty();
  }

  /** The budgets a request of {@code tenant} ({@code tier}) on {@code route} for {@code model}. */
  public List<Applied> budgetsFor(
      String tenant, String tier, String route, @Nullable String model) {
    List<Applied> out = new ArrayList<>(4);
    List<Budget> own = tenants.get(tenant);
    for (Budget b : own != null ? own : tiers.getOrDefault(tier, List.of())) {
      out.add(new Applied(b, Scope.TENANT, tenant, tier));
    }
    for (Budget b : routes.getOrDefault(route, List.of())) {
      out.add(new Applied(b, Scope.ROUTE, route, route));
    }
    if (model != null) {
      modelGroups.forEach(
          (name, g) -> {
            if (g.models().contains(model)) {
              for (Budget b : g.budgets()) {
                out.add(new Applied(b, Scope.MODEL_GROUP, name, name));
              }
            }
          });
    }
    for (Budget b : deployment) {
      out.add(new Applied(b, Scope.DEPLOYMENT, "", "deployment"));
    }
    return out;
  }
}
