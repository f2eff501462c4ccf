package io.sluice.feature.budget;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.config.BudgetsSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.feature.StorePorts;
import java.math.BigDecimal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code GET /budgets?tenant=<id>[&tier=<tier>][&route=<route>][&model=<model>]} on the admin port
 * (no tier: the tenant's in {@code tenants.known}, else {@code tenants.unknownTier}): every budget
 * that applies to such a request, its spend, reservations, remaining, reset time and the forecast
 * at the current rate (spend so far over the time elapsed in the window, times the window's
 * length). Tenant ids appear here, on the admin port only, never in metrics.
 */
public final class BudgetsEndpoint {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private BudgetsEndpoint() {}

  /** The reply's status and JSON body. */
  public record Reply(int status, String json) {}

  /** Answers the query for the config in force, reading the budgets' store port. */
  public static Reply reply(
      SluiceConfig config, StorePorts stores, Map<String, String> query, Clock clock) {
    String tenant = query.get("tenant");
    if (tenant == null || tenant.isEmpty()) {
      return new Reply(400, "{\"error\": \"tenant: missing (expected: ?tenant=<id>)\"}\n");
    }
    // no tier asked: the tenant's own (tenants.known), else an unknown tenant's
    // (tenants.unknownTier)
    SluiceConfig.Tenants t = config.tenants();
    String tier = query.getOrDefault("tier", t.known().getOrDefault(tenant, t.unknownTier()));
    BudgetPolicy p = config.section(BudgetsSection.SECTION);
    BudgetStore store = stores.port(BudgetFeature.BUDGETS);
    String prefix = config.quotas().keyPrefix();
    Instant now = clock.instant();
    ObjectNode root = MAPPER.createObjectNode();
    root.put("tenant", tenant)
        .put("tier", tier)
        .put("enabled", p.enabled())
        .put("now", now.toString());
    ArrayNode list = root.putArray("budgets");
    for (BudgetPolicy.Applied a :
        p.budgetsFor(tenant, tier, query.getOrDefault("route", ""), query.get("model"))) {
      Budget b = a.budget();
      Period.Window w = b.period().at(now);
      Ledger.State s;
      ObjectNode n = list.addObject();
      n.put("name", b.name())
          .put("scope", a.scope().label())
          .put("owner", a.owner())
          .put("meter", b.meter().configName())
          .put("window", w.id())
          .put("resetsAt", w.rolling() ? "rolling" : b.period().stamp(w.end()));
      try {
        s =
            store
                .read(a.key(prefix), b.period(), b.terms(), now)
                .toCompletableFuture()
                .get(2, TimeUnit.SECONDS);
      } catch (Exception e) {
        n.put("error", "store: " + e.getClass().getSimpleName());
        continue;
      }
      long limit = b.terms().limit();
      long elapsed = Math.max(1, Duration.between(w.start(), now).toMillis());
      double forecast = (double) s.spent() * w.length().toMillis() / elapsed;
      put(n, "limit", limit, b);
      put(n, "spent", s.spent(), b);
      put(n, "reserved", s.reserved(), b);
      put(n, "remaining", Math.max(0, limit - s.spent() - s.reserved()), b);
      put(n, "forecast", (long) Math.min(Long.MAX_VALUE, forecast), b);
      n.put("forecastOver", forecast > limit);
      n.put("paced", b.terms().paced());
    }
    try {
      return new Reply(200, MAPPER.writeValueAsString(root) + "\n");
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Money in the currency's units (nano-units inside), tokens as they are. */
  private static void put(ObjectNode n, String field, long units, Budget b) {
    if (b.meter().priced()) {
      n.put(field, BigDecimal.valueOf(units).movePointLeft(9).stripTrailingZeros().toPlainString());
    } else {
      n.put(field, units);
    }
  }
}
