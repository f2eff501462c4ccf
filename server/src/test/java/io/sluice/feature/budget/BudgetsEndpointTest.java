package io.sluice.feature.budget;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.config.BudgetsSection;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetStore;
import io.sluice.feature.StorePorts;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code GET /budgets?tenant=}: spend, remaining, reset and the forecast at the current rate. */
class BudgetsEndpointTest {
  /** One pool, class and route; tiers default and pro. */
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      tiers: {default: {}, pro: {}}
      """;

  @Test
  void tenantsBudgets_spendRemainingResetForecast() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
            budgets:
              enabled: true
              tiers: {pro: [{name: monthly, limit: 30000, period: month}]}
            """);
    InMemoryBudgetStore store = new InMemoryBudgetStore(100);
    StorePorts ports = ports(store);
    MutableClock clock = new MutableClock(Instant.parse("2026-12-11T00:00:00Z")); // day 10 done
    BudgetPolicy p = c.section(BudgetsSection.SECTION);
    BudgetPolicy.Applied a = p.budgetsFor("acme", "pro", "", null).get(0);
    BudgetStore s = store;
    s.reserve(
        a.key(c.quotas().keyPrefix()),
        a.budget().period(),
        a.budget().terms(),
        10_000,
        clock.instant());
    s.settle(
        a.key(c.quotas().keyPrefix()),
        a.budget().period(),
        "m:2026-12-01",
        a.budget().terms(),
        10_000,
        10_000,
        clock.instant());
    BudgetsEndpoint.Reply r =
        BudgetsEndpoint.reply(c, ports, Map.of("tenant", "acme", "tier", "pro"), clock);
    assertThat(r.status()).isEqualTo(200);
    JsonNode b = new ObjectMapper().readTree(r.json()).path("budgets").get(0);
    assertThat(b.path("name").asText()).isEqualTo("monthly");
    assertThat(b.path("spent").asLong()).isEqualTo(10_000);
    assertThat(b.path("remaining").asLong()).isEqualTo(20_000);
    assertThat(b.path("resetsAt").asText()).isEqualTo("2027-01-01T00:00:00Z");
    assertThat(b.path("forecast").asLong()).isEqualTo(31_000); // 10 days' spend over 31 days
    assertThat(b.path("forecastOver").asBoolean()).isTrue();
    assertThat(BudgetsEndpoint.reply(c, ports, Map.of(), clock).status()).isEqualTo(400);
  }

  /** Every store port answered by {@code store} (the budgets' is the one read). */
  private static StorePorts ports(InMemoryBudgetStore store) {
    return new StorePorts() {
      @Override
      @SuppressWarnings("unchecked")
      public <P> P port(io.sluice.feature.StorePort<P> port) {
        return (P) store;
      }
    };
  }

  /** No tier asked: a known tenant's own tier ({@code tenants.known}), else an unknown one's. */
  @Test
  void noTierAsked_theKnownTenantsOwnTier_elseTheUnknownTier() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
            tenants: {unknown: admit, unknownTier: default, known: {acme: {tier: pro}}}
            budgets:
              enabled: true
              tiers:
                pro: [{name: monthly, limit: 30000, period: month}]
                default: [{name: daily, limit: 100, period: day}]
            """);
    StorePorts ports = ports(new InMemoryBudgetStore(100));
    MutableClock clock = new MutableClock(Instant.parse("2026-12-11T00:00:00Z"));
    ObjectMapper json = new ObjectMapper();
    java.util.List<String> seen = new java.util.ArrayList<>();
    for (Map<String, String> q :
        java.util.List.of(
            Map.of("tenant", "acme"),
            Map.of("tenant", "globex"),
            Map.of("tenant", "acme", "tier", "default"))) {
      JsonNode r = json.readTree(BudgetsEndpoint.reply(c, ports, q, clock).json());
      seen.add(r.path("tier").asText() + ":" + r.path("budgets").get(0).path("name").asText());
    }
    assertThat(seen).containsExactly("pro:monthly", "default:daily", "default:daily");
  }
}
