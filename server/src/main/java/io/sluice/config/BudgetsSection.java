package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The {@code budgets} section (docs/configuration.md, "Budgets"): budgets over billing periods per
 * tier (replaced per tenant), route, model group and Deployment, the price table, the refusal's
 * status and what a store outage does. Every error names its YAML path and the value expected;
 * budgets and prices are read by {@link BudgetsReader}.
 */
public final class BudgetsSection implements ConfigSection<BudgetPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(BudgetsSection.SECTION)}. */
  public static final BudgetsSection SECTION = new BudgetsSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public BudgetsSection() {}

  @Override
  public String name() {
    return "budgets";
  }

  @Override
  public BudgetPolicy defaults() {
    return BudgetPolicy.DEFAULTS;
  }

  @Override
  public BudgetPolicy read(Node n, Refs refs) {
    BudgetPolicy d = BudgetPolicy.DEFAULTS;
    n.only(
        Set.of(
            "enabled",
            "refusalStatus",
            "maxWait",
            "maxEntries",
            "failureMode",
            "localShare",
            "prices",
            "tiers",
            "tenants",
            "routes",
            "modelGroups",
            "deployment",
            "degradeAt",
            "degradeRung"));
    boolean enabled = n.get("enabled").bool(d.enabled());
    int status = n.get("refusalStatus").intValue(d.refusalStatus(), 100, 599);
    if (n.get("refusalStatus").present() && !BudgetPolicy.REFUSAL_STATUSES.contains(status)) {
      n.get("refusalStatus").invalid(Integer.toString(status), "402, 422 or 429");
      status = d.refusalStatus();
    }
    Duration maxWait = n.get("maxWait").duration(d.maxWait());
    if (maxWait.isNegative() || maxWait.compareTo(Duration.ofMinutes(5)) > 0) {
      n.get("maxWait").invalid(ConfigWriter.duration(maxWait), "a duration in 0..5m");
      maxWait = d.maxWait();
    }
    int maxEntries = n.get("maxEntries").intValue(d.maxEntries(), 1, 10_000_000);
    BudgetBook.FailureMode mode =
        n.get("failureMode")
            .optionalEnumValue(
                BudgetBook.FailureMode.class, null, m -> m.name().toLowerCase(Locale.ROOT));
    double share = n.get("localShare").doubleValue(d.localShare(), 0.0, 1.0);
    BudgetsReader r = new BudgetsReader();
    var prices = r.prices(n.get("prices"));
    Map<String, List<Budget>> tiers = r.byName(n.get("tiers"));
    for (var e : tiers.keySet()) {
      if (!refs.tiers().contains(e)) {
        n.get("tiers").get(e).invalid(e, "the name of a tier in tiers, or default");
      }
    }
    Map<String, List<Budget>> tenants = r.byName(n.get("tenants"));
    Map<String, List<Budget>> routes = r.byName(n.get("routes"));
    for (var e : routes.keySet()) {
      if (!refs.routes().contains(e)) {
        n.get("routes").get(e).invalid(e, "the name of a route in routes");
      }
    }
    Map<String, BudgetPolicy.ModelGroup> groups = new LinkedHashMap<>();
    for (var e : n.get("modelGroups").entries().entrySet()) {
      Node g = e.getValue().only(Set.of("models", "budgets"));
      Set<String> models = new LinkedHashSet<>();
      for (Node m : g.get("models").items()) {
        models.add(m.requiredString());
      }
      if (models.isEmpty()) {
        g.get("models")
            .invalid(
                String.valueOf(g.get("models").present() ? "[]" : "missing"),
                "a list of model names");
      }
      groups.put(e.getKey(), new BudgetPolicy.ModelGroup(models, r.list(g.get("budgets"))));
    }
    List<Budget> deployment = r.list(n.get("deployment"));
    double degradeAt = n.get("degradeAt").doubleValue(d.degrade().at(), 0.0, 1.0);
    String rung = n.get("degradeRung").present() ? n.get("degradeRung").requiredString() : null;
    if (rung != null) {
      Set<String> known = new java.util.TreeSet<>();
      refs.rungs().values().forEach(known::addAll);
      if (!known.contains(rung)) {
        n.get("degradeRung")
            .invalid(
                rung,
                known.isEmpty()
                    ? "none: no class has a degrade ladder (classes.<name>.degrade.ladder)"
                    : "a rung of a class's degrade ladder: " + String.join(", ", known));
        rung = null;
      }
    }
    BudgetPolicy p =
        new BudgetPolicy(
            enabled,
            status,
            maxWait,
            maxEntries,
            mode,
            share,
            prices,
            tiers,
            tenants,
            routes,
            groups,
            deployment,
            new BudgetPolicy.Degrade(degradeAt, rung));
    if (r.money && prices.models().isEmpty() && prices.at(null, java.time.Instant.EPOCH) == null) {
      n.get("prices")
          .invalid("none", "a price table (prices.models or prices.default) for a money budget");
    }
    return p;
  }

  /** The section as the loader reads it. */
  @Override
  public ObjectNode write(BudgetPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("enabled", p.enabled())
        .put("refusalStatus", p.refusalStatus())
        .put("maxWait", ConfigWriter.duration(p.maxWait()))
        .put("maxEntries", p.maxEntries());
    if (p.failureMode() != null) {
      n.put("failureMode", p.failureMode().name().toLowerCase(Locale.ROOT));
    }
    n.put("localShare", p.localShare());
    n.set("prices", BudgetsReader.writePrices(p.prices()));
    ObjectNode tiers = n.putObject("tiers");
    p.tiers().forEach((k, v) -> tiers.set(k, BudgetsReader.writeList(v)));
    ObjectNode tenants = n.putObject("tenants");
    p.tenants().forEach((k, v) -> tenants.set(k, BudgetsReader.writeList(v)));
    ObjectNode routes = n.putObject("routes");
    p.routes().forEach((k, v) -> routes.set(k, BudgetsReader.writeList(v)));
    ObjectNode groups = n.putObject("modelGroups");
    p.modelGroups()
        .forEach(
            (k, g) -> {
              ObjectNode gn = groups.putObject(k);
              ArrayNode models = gn.putArray("models");
              new ArrayList<>(g.models()).stream().sorted().forEach(models::add);
              gn.set("budgets", BudgetsReader.writeList(g.budgets()));
            });
    n.set("deployment", BudgetsReader.writeList(p.deployment()));
    n.put("degradeAt", p.degrade().at());
    if (p.degrade().rung() != null) {
      n.put("degradeRung", p.degrade().rung());
    }
    return n;
  }
}
