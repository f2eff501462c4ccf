package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.EnginePriority;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code classes.<name>.degrade}, {@code pools.<name>.enginePriority}, {@code routes[].degrade},
 * the {@code noDegrade} signal and the deadline keys of {@code responses}: parsed, validated naming
 * the field and the expected value, and written back by the effective config.
 */
class DegradeConfigTest {
  private static final String POLICY =
      """
      pools:
        gpu:
          capacity: 10000
          enginePriority: {preset: vllm, header: x-priority, values: {batch: 7}}
        small: {capacity: 2000}
      classes:
        interactive:
          reservedShare: 0.7
          degrade:
            waitAbove: 2s
            headroomBelow: 0.15
            ladder:
              - concise: {maxOutputTokens: 256, instruction: "Answer briefly."}
              - reroute: {pool: small, header: x-backend, value: small, model: small-model}
        batch: {rank: 1}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat}, class: interactive}
        - {name: strict, match: {pathPrefix: /strict}, class: interactive, degrade: false}
      responses: {deadlineHeader: X-Deadline-Ms, upstreamTimeout: true}
      signals:
        noDegrade: [{metadata: x-sluice-no-degrade}]
      """;

  @Test
  void parsed() {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    DegradePolicy d = c.classes().get("interactive").degrade();
    assertThat(d.waitAbove()).isEqualTo(Duration.ofSeconds(2));
    assertThat(d.headroomBelow()).isEqualTo(0.15);
    assertThat(d.ladder())
        .containsExactly(
            new DegradePolicy.Concise(256, "Answer briefly.", null),
            new DegradePolicy.Reroute("small", "x-backend", "small", "small-model"));
    assertThat(c.classes().get("batch").degrade()).isEqualTo(DegradePolicy.OFF);
    EnginePriority ep = c.pools().get("gpu").enginePriority();
    assertThat(ep.preset()).isEqualTo(EnginePriority.Preset.VLLM);
    assertThat(ep.field()).isEqualTo("priority");
    assertThat(ep.header()).isEqualTo("x-priority");
    assertThat(ep.values()).isEqualTo(Map.of("batch", "7"));
    assertThat(c.pools().get("small").enginePriority()).isEqualTo(EnginePriority.OFF);
    assertThat(c.routes().get(0).degrade()).isTrue();
    assertThat(c.routes().get(1).degrade()).isFalse();
    assertThat(c.responses().deadlineHeader()).isEqualTo("x-deadline-ms");
    assertThat(c.responses().upstreamTimeout()).isTrue();
    assertThat(c.signals().get(SluiceConfig.Signal.NO_DEGRADE))
        .containsExactly(new SluiceConfig.Source.Metadata("x-sluice-no-degrade"));
  }

  @Test
  void defaults() {
    SluiceConfig c =
        ConfigLoader.parse("pools: {gpu: {capacity: 10}}\nclasses: {interactive: {}}\n");
    assertThat(c.responses().deadlineHeader()).isEqualTo("x-sluice-deadline-ms");
    assertThat(c.responses().upstreamTimeout()).isFalse();
  }

  @Test
  void effectiveConfig_roundTrips() {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    SluiceConfig again = ConfigLoader.parse(ConfigWriter.tree(c).toString());
    assertThat(again.classes()).isEqualTo(c.classes());
    assertThat(again.pools()).isEqualTo(c.pools());
    assertThat(again.routes()).isEqualTo(c.routes());
    assertThat(again.responses()).isEqualTo(c.responses());
  }

  @Test
  void badValues_nameTheFieldAndTheExpectedValue() {
    String yaml =
        """
        pools:
          gpu:
            capacity: 1000
            enginePriority: {preset: triton, values: {batch: high}}
        classes:
          interactive:
            degrade:
              waitAbove: 2s
              ladder:
                - concise: {instruction: x}
                - reroute: {pool: nowhere, header: x-b}
                - concise: {maxOutputTokens: 0}
                - squeeze: {}
          batch:
            degrade: {ladder: [{concise: {maxOutputTokens: 10, capField: max_len}}]}
        responses: {deadlineHeader: "bad header"}
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e -> {
              List<String> errors = e.errors();
              assertThat(errors)
                  .contains(
                      "pools.gpu.enginePriority.preset: triton (expected: one of none, vllm,"
                          + " sglang, tensorrt-llm)",
                      "classes.interactive.degrade.ladder[0].concise.maxOutputTokens: missing"
                          + " (expected: output tokens >= 1)",
                      "classes.interactive.degrade.ladder[1].reroute: header and value go together"
                          + " (expected: both, or neither)",
                      "classes.interactive.degrade.ladder[2].concise.maxOutputTokens: 0 (expected:"
                          + " an integer in 1..10000000)",
                      "classes.batch.degrade: no trigger (expected: waitAbove > 0s and/or"
                          + " headroomBelow > 0, e.g. waitAbove: 2s)",
                      "classes.batch.degrade.ladder[0].concise.capField: max_len (expected:"
                          + " max_tokens, max_completion_tokens or max_output_tokens)",
                      "responses.deadlineHeader: bad header (expected: an HTTP header name, or"
                          + " \"\" for none)")
                  .anySatisfy(err -> assertThat(err).contains("ladder[3].squeeze"))
                  .noneSatisfy(err -> assertThat(err).contains("ladder[3].reroute"))
                  .hasSize(8);
            });
  }

  @Test
  void rerouteToAPoolThatDoesNotExist_isAnError() {
    String yaml =
        """
        pools: {gpu: {capacity: 1000}}
        classes:
          interactive:
            degrade: {waitAbove: 1s, ladder: [{reroute: {pool: nowhere, model: m}}]}
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .contains(
                        "classes.interactive.degrade.ladder.reroute.pool: nowhere (expected: a"
                            + " name defined under pools: gpu)"));
  }
}
