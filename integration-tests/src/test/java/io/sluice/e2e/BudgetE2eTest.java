package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.emulator.HttpResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Budgets through the emulated Envoy: past a soft threshold the admitted answers disclose what is
 * left ({@code x-sluice-budget-remaining}, ...); the spent budget answers 402 {@code
 * budget_exhausted} with {@code "retryable": false} and no Retry-After; a client retry loop that
 * honours {@code retryable} makes no second attempt. Past {@code budgets.degradeAt} the class's
 * concise rung runs the request first (trigger {@code budget}); a reroute rung runs it on its
 * model, charged at that model's price.
 */
@Timeout(60)
class BudgetE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  /** A client loop ({@code loop}) on the spent budget: one attempt, one refusal counted. */
  private void oneAttemptOnly(RetryLoop loop) throws Exception {
    double before =
        h.counter("sluice.decisions", "decision", "reject", "reason", "budget_exhausted");
    int attempts =
        loop.attempts(
            () -> {
              try {
                return h.send(chat(chatBody(20, false)).build());
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    assertThat(attempts).isEqualTo(1);
    assertThat(h.counter("sluice.decisions", "decision", "reject", "reason", "budget_exhausted"))
        .isEqualTo(before + 1);
  }

  /** How many attempts a client's retry loop makes. */
  @FunctionalInterface
  private interface RetryLoop {
    int attempts(java.util.function.Supplier<HttpResult> send) throws Exception;
  }

  /** An SDK-style loop: retries 408/409/429/5xx up to 3 attempts unless the body says otherwise. */
  private int attemptsOf(java.util.function.Supplier<HttpResult> send) throws Exception {
    for (int attempt = 1; ; attempt++) {
      HttpResult r = send.get();
      boolean retryableStatus =
          r.status() == 408 || r.status() == 409 || r.status() == 429 || r.status() >= 500;
      JsonNode body = r.status() >= 400 ? JSON.readTree(r.body()) : JSON.createObjectNode();
      boolean forbidden = body.path("error").path("retryable").asBoolean(true) == false;
      if (!retryableStatus || forbidden || attempt == 3) {
        return attempt;
      }
    }
  }

  /**
   * The OpenAI Python/Node SDKs' own rule ({@code _should_retry}): {@code x-should-retry} decides
   * when present; else 408, 409, 429 and 5xx are retried. It never reads the body.
   */
  private static int sdkAttemptsOf(java.util.function.Supplier<HttpResult> send) {
    for (int attempt = 1; ; attempt++) {
      HttpResult r = send.get();
      java.util.Optional<String> should = r.header("x-should-retry");
      boolean retry =
          should.isPresent()
              ? should.get().equals("true")
              : r.status() == 408 || r.status() == 409 || r.status() == 429 || r.status() >= 500;
      if (!retry || attempt == 3) {
        return attempt;
      }
    }
  }

  @Test
  void budgetRefusedWith429_carriesShouldRetryFalse_anSdkLoopMakesNoSecondAttempt()
      throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with(
                    "budgets",
                    "{enabled: true, refusalStatus: 429,"
                        + " deployment: [{name: all, limit: 600, period: day}]}"));
    HttpResult refused = null;
    for (int i = 0; i < 200 && refused == null; i++) {
      HttpResult r = h.send(chat(chatBody(20, false)).build());
      if (r.status() != 200) {
        refused = r;
      }
    }
    assertThat(refused).isNotNull();
    RejectE2eTest.assertRejected(refused, 429, "budget_exhausted", "tenant");
    assertThat(refused.header("x-should-retry")).contains("false");
    oneAttemptOnly(BudgetE2eTest::sdkAttemptsOf);
  }

  @Test
  void softThresholdHeaders_then402BudgetExhausted_notRetryable_noSecondAttempt() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with(
                    "budgets",
                    "{enabled: true, deployment: [{name: all, limit: 3000, period: day,"
                        + " zone: Europe/Berlin, thresholds: [0.3]}]}"));
    HttpResult refused = null;
    HttpResult disclosed = null;
    int admitted = 0;
    for (int i = 0; i < 300 && refused == null; i++) {
      HttpResult r = h.send(chat(chatBody(20, false)).build());
      if (r.status() == 200) {
        admitted++;
        if (r.header("x-sluice-budget-remaining").isPresent()) {
          disclosed = r;
        }
      } else {
        refused = r;
      }
    }
    assertThat(admitted).isPositive();
    assertThat(disclosed).as("an admitted answer past the threshold").isNotNull();
    assertThat(disclosed.header("x-sluice-budget")).contains("all");
    assertThat(Long.parseLong(disclosed.header("x-sluice-budget-remaining").orElseThrow()))
        .isLessThan(3000 * 7 / 10 + 1);
    assertThat(disclosed.header("x-sluice-budget-reset")).isPresent();

    assertThat(refused).isNotNull();
    RejectE2eTest.assertRejected(refused, 402, "budget_exhausted", "tenant");
    JsonNode error = JSON.readTree(refused.body()).path("error");
    assertThat(error.path("retryable").asBoolean(true)).isFalse();
    assertThat(error.path("type").asText()).isEqualTo("insufficient_quota");
    assertThat(error.path("message").asText()).contains("renews at");
    assertThat(refused.header("retry-after")).isEmpty();
    // the period's end: its own field and a header, RFC 3339 with the zone's offset then
    java.util.List<String> ends = berlinDayEnds();
    assertThat(error.path("budget").asText()).isEqualTo("all");
    assertThat(error.path("period_end").asText()).isIn(ends);
    assertThat(refused.header("x-sluice-budget-reset"))
        .hasValueSatisfying(v -> assertThat(v).isIn(ends));
    assertThat(disclosed.header("x-sluice-budget-reset"))
        .hasValueSatisfying(v -> assertThat(v).isIn(ends));

    oneAttemptOnly(this::attemptsOf);
    assertThat(h.counter("sluice.budget.refusals", "reason", "budget_exhausted"))
        .isGreaterThanOrEqualTo(2);
    assertThat(h.counter("sluice.budget.threshold.crossings")).isEqualTo(1);
  }

  @Test
  void pastDegradeAt_theConciseRungRunsIt_triggerBudget_thenTheHardStop() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with(
                    "classes.interactive.degrade",
                    "{waitAbove: 30s, ladder: [{concise: {maxOutputTokens: 50}}]}")
                .with(
                    "budgets",
                    "{enabled: true, degradeAt: 0.3, degradeRung: concise,"
                        + " deployment: [{name: all, limit: 4000, period: day}]}"));
    HttpResult first = h.send(chat(chatBody(400, false)).build());
    assertThat(first.status()).isEqualTo(200);
    assertThat(first.header("x-sluice-degraded")).as("far from the level").isEmpty();
    HttpResult degraded = null;
    HttpResult refused = null;
    for (int i = 0; i < 300 && refused == null; i++) {
      HttpResult r = h.send(chat(chatBody(400, false)).build());
      if (r.status() != 200) {
        refused = r;
      } else if (degraded == null && r.header("x-sluice-degraded").isPresent()) {
        degraded = r;
      }
    }
    assertThat(degraded).as("an answer past degradeAt, run concise").isNotNull();
    assertThat(degraded.header("x-sluice-degraded")).hasValue("concise");
    assertThat(str(sluiceMetadata(degraded), "degrade_trigger")).isEqualTo("budget");
    assertThat(h.counter("sluice.degraded", "rung", "concise", "trigger", "budget")).isPositive();
    assertThat(refused).as("the hard stop stays").isNotNull();
    RejectE2eTest.assertRejected(refused, 402, "budget_exhausted", "tenant");
  }

  /**
   * A reroute rung's model priced end to end: past {@code degradeAt} the class's reroute rung runs
   * the request on pool {@code small} under the rung's model, and the money budget is charged at
   * that model's price for the reported usage; a rung model the table does not price follows {@code
   * prices.unknownModel} ({@code default}: the default price; {@code refuse}: the asked model's,
   * the request being admitted already). Prices per 1M: gpt-4o 5 / 15, mini 0.15 / 0.60, default 1
   * / 4 (whole nano-units per token: the charge is exact).
   */
  @ParameterizedTest(name = "rung model {0}, unknownModel {1}")
  @CsvSource({
    "mini, refuse, 150, 600",
    "unlisted, default, 1000, 4000",
    "unlisted, refuse, 5000, 15000"
  })
  void rerouteRung_runsOnItsModel_theMoneyBudgetChargedAtItsPrice(
      String model, String unknownModel, long inputNanos, long outputNanos) throws Exception {
    ControlledUpstream small = new ControlledUpstream();
    h =
        SluiceEnvoyHarness.startRouted(
            Policy.base()
                .with("pools.small", "{capacity: 1000}")
                .with(
                    "classes.interactive.degrade",
                    "{waitAbove: 30s, ladder: [{reroute: {pool: small, header: x-backend,"
                        + " value: small, model: "
                        + model
                        + "}}]}")
                .with(
                    "budgets",
                    "{enabled: true, degradeAt: 0.000001, degradeRung: reroute,"
                        + " prices: {unknownModel: "
                        + unknownModel
                        + ", default: {input: 1, output: 4}, models: {gpt-4o: {input: 5,"
                        + " output: 15}, mini: {input: 0.15, output: 0.60}}},"
                        + " deployment: [{name: usd, meter: money, limit: 100, period: day}]}"),
            SluiceEnvoyHarness.recommendedFilter().build(),
            big ->
                io.sluice.emulator.RouteTable.of(
                    io.sluice.emulator.Route.header("small", "x-backend", "small", small),
                    io.sluice.emulator.Route.catchAll("big", big)));
    HttpResult r = h.send(chat(chatBody(400, false)).build());
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.routeName()).hasValue("small");
    assertThat(r.header("x-sluice-degraded")).hasValue("reroute");
    assertThat(str(sluiceMetadata(r), "degrade_trigger")).isEqualTo("budget");
    assertThat(h.upstream.received()).as("nothing ran on the asked model").isEmpty();
    assertThat(JSON.readTree(small.received().get(0).body()).path("model").asText())
        .isEqualTo(model);
    JsonNode usage = JSON.readTree(r.body()).path("usage");
    long in = usage.path("prompt_tokens").asLong();
    long out = usage.path("completion_tokens").asLong();
    assertThat(in).isPositive();
    assertThat(out).isPositive();
    h.awaitNothingInFlight();
    double charged = (in * inputNanos + out * outputNanos) / 1e9;
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(h.counter("sluice.budget.spent", "budget", "usd", "meter", "money"))
                    .as(
                        "charged for %d + %d tokens at %d / %d nano per token",
                        in, out, inputNanos, outputNanos)
                    .isCloseTo(charged, org.assertj.core.data.Offset.offset(1e-12)));
    small.close();
  }

  /** The end of today in Europe/Berlin, and of tomorrow (the test may run over midnight). */
  private static java.util.List<String> berlinDayEnds() {
    java.time.ZoneId berlin = java.time.ZoneId.of("Europe/Berlin");
    java.time.LocalDate today = java.time.LocalDate.now(berlin);
    return java.util.List.of(
        today
            .plusDays(1)
            .atStartOfDay(berlin)
            .format(java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME),
        today
            .plusDays(2)
            .atStartOfDay(berlin)
            .format(java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME));
  }
}
