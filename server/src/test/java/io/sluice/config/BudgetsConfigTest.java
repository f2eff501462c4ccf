package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Prices;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The {@code budgets} section: read, errors naming the field and the value expected, written back.
 */
class BudgetsConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  static final String RICH =
      BASE
          + """
          tiers: {default: {}, free: {}, pro: {}}
          budgets:
            enabled: true
            refusalStatus: 422
            maxWait: 2s
            failureMode: local
            localShare: 0.25
            prices:
              unknownModel: default
              default: {input: 1, output: 4, cachedInput: 0.1}
              models:
                gpt-4o:
                  - {from: 2024-05-13, input: 5.00, output: 15.00, cachedInput: 2.50}
                  - {from: 2024-10-01, input: 2.50, output: 10.00, cachedInput: 1.25}
            tiers:
              free:
                - {name: daily-tokens, limit: 1000000, period: day, zone: Europe/Berlin, thresholds: [0.8, 0.95], pacing: true}
              pro:
                - {name: monthly-usd, meter: money, limit: 250.50, period: month, thresholds: [0.8]}
                - {name: output, meter: outputTokens, limit: 5000000, period: rolling, window: 24h, slices: 24, pacing: {burst: 10000}}
            tenants:
              acme: [{name: monthly-usd, meter: money, limit: 1000, period: month}]
            routes:
              chat: [{name: chat-week, limit: 9000000, period: week, weekStart: sunday}]
            modelGroups:
              frontier: {models: [gpt-4o], budgets: [{name: frontier-day, meter: money, limit: 50, period: day}]}
            deployment: [{name: all, meter: money, limit: 10000, period: month}]
          """;

  @Test
  void absent_offWithItsDefaults() {
    assertThat(ConfigLoader.parse(BASE).section(BudgetsSection.SECTION))
        .isEqualTo(BudgetPolicy.DEFAULTS);
  }

  @Test
  void section_isRead() {
    BudgetPolicy p = ConfigLoader.parse(RICH).section(BudgetsSection.SECTION);
    assertThat(p.enabled()).isTrue();
    assertThat(p.refusalStatus()).isEqualTo(422);
    assertThat(p.maxWait()).isEqualTo(Duration.ofSeconds(2));
    assertThat(p.failureMode()).isEqualTo(BudgetBook.FailureMode.LOCAL);
    Budget free = p.tiers().get("free").get(0);
    assertThat(free.period())
        .isEqualTo(
            new Period.Calendar(
                Period.Unit.DAY, ZoneId.of("Europe/Berlin"), java.time.DayOfWeek.MONDAY));
    assertThat(free.terms().burst()).isEqualTo(10_000); // 1 % of the limit
    Budget usd = p.tiers().get("pro").get(0);
    assertThat(usd.meter()).isEqualTo(Budget.Meter.MONEY);
    assertThat(usd.terms().limit()).isEqualTo(250_500_000_000L);
    assertThat(p.prices().at("gpt-4o", Instant.parse("2024-11-01T00:00:00Z")).input())
        .isEqualTo(2_500_000_000L);
    assertThat(p.prices().at("gpt-4o", Instant.parse("2024-06-01T00:00:00Z")).input())
        .isEqualTo(5_000_000_000L);
    assertThat(p.prices().at("unknown", Instant.EPOCH).output()).isEqualTo(4_000_000_000L);
    assertThat(p.budgetsFor("acme", "pro", "chat", "gpt-4o"))
        .extracting(a -> a.scope() + ":" + a.budget().name())
        .containsExactly(
            "TENANT:monthly-usd", "ROUTE:chat-week", "MODEL_GROUP:frontier-day", "DEPLOYMENT:all");
    assertThat(p.budgetsFor("bob", "pro", "other", null))
        .extracting(a -> a.budget().name() + "/" + a.group())
        .containsExactly("monthly-usd/pro", "output/pro", "all/deployment");
  }

  @Test
  void section_writtenBackTheSame() {
    SluiceConfig c = ConfigLoader.parse(RICH);
    String yaml = ConfigWriter.tree(c).toString();
    assertThat(ConfigLoader.parse(toYaml(c)).section(BudgetsSection.SECTION))
        .isEqualTo(c.section(BudgetsSection.SECTION));
    assertThat(yaml).contains("\"budgets\"");
  }

  private static String toYaml(SluiceConfig c) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper(
              new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
          .writeValueAsString(ConfigWriter.tree(c));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void errors_nameTheFieldAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        budgets:
                          refusalStatus: 503
                          tiers:
                            pro:
                              - {name: a, limit: 0}
                              - {name: b, limit: 10, period: year}
                              - {name: c, limit: 10, zone: Mars/Olympus}
                              - {name: d, meter: money, limit: -1}
                              - {name: e, limit: 10, thresholds: [0.9, 0.5]}
                          routes: {nope: [{name: x, limit: 1}]}
                          prices: {unknownModel: default}
                        """))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("budgets.refusalStatus: 503 (expected: 402, 422 or 429)")
        .hasMessageContaining("budgets.tiers.pro[0].limit: 0 (expected: an integer in 1..")
        .hasMessageContaining(
            "budgets.tiers.pro[1].period: year (expected: one of day, week, month, rolling)")
        .hasMessageContaining("budgets.tiers.pro[2].zone: Mars/Olympus (expected: a time zone")
        .hasMessageContaining("budgets.tiers.pro[3].limit: -1 (expected: an amount > 0")
        .hasMessageContaining("budgets.tiers.pro[4].thresholds")
        .hasMessageContaining("budgets.routes.nope")
        .hasMessageContaining(
            "budgets.tiers.pro: pro (expected: the name of a tier in tiers, or default)")
        .hasMessageContaining("budgets.prices.default: missing");
  }

  private static final String LADDER =
      """
      pools: {p: {capacity: 100}}
      classes:
        c: {rank: 0, degrade: {waitAbove: 2s, ladder: [{concise: {maxOutputTokens: 64}}]}}
        d: {rank: 1, degrade: {headroomBelow: 0.1, ladder: [{reroute: {pool: p, model: small}}]}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  @Test
  void degradeAt_perBudget_defaultTheSections_writtenBack() {
    SluiceConfig c =
        ConfigLoader.parse(
            LADDER
                + """
                budgets:
                  enabled: true
                  degradeAt: 0.9
                  degradeRung: concise
                  deployment:
                    - {name: own, limit: 1000, degradeAt: 0.5}
                    - {name: never, limit: 1000, degradeAt: 0}
                    - {name: sections, limit: 1000}
                """);
    BudgetPolicy p = c.section(BudgetsSection.SECTION);
    assertThat(p.deployment()).extracting(Budget::degradeAt).containsExactly(0.5, 0.0, null);
    List<Budget> d = p.deployment();
    assertThat(p.degrade().asks(d.get(0), 0.6)).isTrue();
    assertThat(p.degrade().asks(d.get(1), 0.99)).as("0: never, whatever the section's").isFalse();
    assertThat(p.degrade().asks(d.get(2), 0.6)).isFalse();
    assertThat(p.degrade().asks(d.get(2), 0.9)).as("the section's level").isTrue();
    assertThat(ConfigLoader.parse(toYaml(c)).section(BudgetsSection.SECTION)).isEqualTo(p);
  }

  @Test
  void degradeRung_mustBeARungOfAClassLadder_naming_theExpectedValues() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    LADDER
                        + """
                        budgets:
                          degradeRung: small-model
                          deployment: [{name: a, limit: 10, degradeAt: 1.5}]
                        """))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining(
            "budgets.degradeRung: small-model (expected: a rung of a class's degrade ladder:"
                + " concise, reroute)")
        .hasMessageContaining("budgets.deployment[0].degradeAt: 1.5 (expected:");
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "budgets: {degradeRung: concise}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining(
            "budgets.degradeRung: concise (expected: none: no class has a degrade ladder");
  }

  @Test
  void pricesEqualByValue() {
    assertThat(Prices.NONE).isEqualTo(new Prices(java.util.Map.of(), null, Prices.Unknown.REFUSE));
    assertThat(List.of()).isEmpty();
  }
}
