package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.retry.RetryPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code retries} section and the retry signals (issue 19). */
class RetriesConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  @Test
  void absent_defaultsOn_andRetrySignalsReadTheClientsHeaders() {
    SluiceConfig c = ConfigLoader.parse(BASE);
    assertThat(c.section(RetriesSection.SECTION)).isEqualTo(RetryPolicy.DEFAULTS);
    assertThat(c.signals().get(RetriesSection.RETRY_COUNT))
        .containsExactly(new Source.Header("x-stainless-retry-count"));
    assertThat(c.signals().get(RetriesSection.ATTEMPT_COUNT))
        .containsExactly(new Source.Header("x-envoy-attempt-count"));
    assertThat(TrustedHeaders.warnings(c)).isEmpty(); // safe from a client: no warning
  }

  @Test
  void section_isRead_andWrittenBackTheSame() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                signals: {retryCount: [{metadata: x-retry}], attemptCount: []}
                retries:
                  enabled: true
                  window: 30s
                  maxEntries: 500
                  budget: {enabled: true, scope: pool, maxTokens: 20, tokenRatio: 0.5}
                  earlyRetry: refuse
                  duplicates:
                    inFlight: admit
                    replayWindow: 10s
                    maxInFlight: 2m
                    routes: {chat: {inFlight: refuse, replayWindow: 0s}}
                """);
    RetryPolicy r = c.section(RetriesSection.SECTION);
    assertThat(r.window()).isEqualTo(Duration.ofSeconds(30));
    assertThat(r.maxEntries()).isEqualTo(500);
    assertThat(r.budget())
        .isEqualTo(new RetryPolicy.Budget(true, RetryPolicy.Budget.Scope.POOL, 20, 0.5));
    assertThat(r.earlyRetry()).isEqualTo(RetryPolicy.EarlyRetry.REFUSE);
    assertThat(r.duplicates().forRoute("chat"))
        .isEqualTo(
            new RetryPolicy.Duplicates.Route(RetryPolicy.Duplicates.Action.REFUSE, Duration.ZERO));
    assertThat(r.duplicates().forRoute("other").inFlight())
        .isEqualTo(RetryPolicy.Duplicates.Action.ADMIT);
    assertThat(c.signals().get(RetriesSection.RETRY_COUNT))
        .containsExactly(new Source.Metadata("x-retry"));
    assertThat(c.signals().get(RetriesSection.ATTEMPT_COUNT)).isEmpty();
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(RetriesSection.SECTION)).isEqualTo(r);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        retries:
                          window: 0.5s
                          maxEntries: 0
                          budget: {maxTokens: 2000, tokenRatio: -1, scope: tenants}
                          earlyRetry: drop
                          duplicates: {inFlight: maybe, replayWindow: 48h, routes: {nope: {}}}
                          extra: 1
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e -> {
              List<String> errors = ((ConfigException) e).errors();
              assertThat(errors)
                  .contains(
                      "retries.window: 500ms (expected: a duration in 1s..1h)",
                      "retries.maxEntries: 0 (expected: an integer in 1..10000000)",
                      "retries.budget.maxTokens: 2000 (expected: > 0 and <= 1000.0)",
                      "retries.budget.tokenRatio: -1 (expected: > 0 and <= 10.0)",
                      "retries.earlyRetry: \"drop\" (expected: one of count, refuse)",
                      "retries.duplicates.inFlight: \"maybe\" (expected: one of refuse, admit)",
                      "retries.duplicates.replayWindow: 48h (expected: 0 (off) or a duration up to"
                          + " 24h)",
                      "retries.duplicates.routes.nope: nope (expected: the name of a route in"
                          + " routes, or unmatched)");
              assertThat(errors).anyMatch(m -> m.startsWith("retries.budget.scope"));
              assertThat(errors).anyMatch(m -> m.startsWith("retries.extra"));
            });
  }
}
