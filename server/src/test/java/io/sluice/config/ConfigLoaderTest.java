package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.estimate.RequestFormat;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {
  @Test
  void embeddedDefault_isValidAndDescribesOneSmallPool() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    assertThat(c.pools()).containsOnlyKeys("default");
    assertThat(c.classes()).containsKeys("interactive", "agent", "batch");
    assertThat(c.server().grpcPort()).isEqualTo(8081);
    assertThat(c.server().adminPort()).isEqualTo(8080);
    assertThat(c.tenants().anonymousTier()).isEqualTo("default");
    assertThat(c.tiers().get("default").maxInFlight()).isZero();
    assertThat(c.signals().get(SluiceConfig.Signal.TENANT))
        .contains(new Source.Metadata("x-sluice-tenant"), new Source.Header("x-tenant-id"));
    assertThat(c.routes())
        .extracting(SluiceConfig.RouteRule::format)
        .contains(RequestFormat.OPENAI_CHAT);
  }

  @Test
  void parse_emptyDocument_reportsMissingPoolsAndClasses() {
    assertThatThrownBy(() -> ConfigLoader.parse(""))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .anyMatch(s -> s.startsWith("pools: missing"))
                    .anyMatch(s -> s.startsWith("classes: missing")));
  }

  @Test
  void parse_documentThatIsNotAMapping_namesTheDocument() {
    for (String yaml : new String[] {"2]\n", "- a\n- b\n", "just text\n"}) {
      assertThatThrownBy(() -> ConfigLoader.parse(yaml))
          .as(yaml)
          .isInstanceOfSatisfying(
              ConfigException.class,
              e ->
                  assertThat(e.errors())
                      .isNotEmpty()
                      .allMatch(s -> !s.startsWith(":"))
                      .anyMatch(s -> s.startsWith("(document): ") && s.contains("a mapping")));
    }
  }

  @Test
  void parse_reportsEveryErrorWithPathAndExpectedValue() {
    String yaml =
        """
        pools:
          gpu:
            capacity: -5
            retryAfter: {min: soon}
        classes:
          interactive: {rank: 0, reservedShare: 1.5, deadline: 30}
          batch: {rank: 1, shedStatus: 418}
        tiers:
          free: {weight: 0}
        tenants:
          anonymousTier: gold
        routes:
          - name: chat
            match: {pathPrefix: /v1/chat}
            pool: cpu
            class: interactive
            format: openai-chatt
        unknownSection: 1
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .contains(
                        "pools.gpu.capacity: -5 (expected: an integer in 1..2305843009213693951)",
                        "pools.gpu.retryAfter.min: \"soon\" (expected: a duration such as 250ms, 2s, 1.5s, 5m, 1h)",
                        "classes.interactive.reservedShare: 1.5 (expected: a number in 0.0..1.0)",
                        "classes.interactive.deadline: 30 (expected: a duration such as 250ms, 2s, 1.5s, 5m, 1h)",
                        "classes.batch.shedStatus: 418 (expected: 429 or 503)",
                        "tiers.free.weight: 0 (expected: a number in 1.0E-6..1000000.0)",
                        "routes[0].pool: cpu (expected: a name defined under pools: gpu)")
                    .anyMatch(s -> s.startsWith("tenants.anonymousTier: gold (expected: a tier"))
                    .anyMatch(
                        s ->
                            s.startsWith(
                                "routes[0].format: \"openai-chatt\" (expected: one of openai-chat"))
                    .anyMatch(s -> s.startsWith("unknownSection: unknown key (expected one of:")));
  }

  @Test
  void parse_tokenCache_defaultsAndBounds() {
    SluiceConfig.Estimation d =
        ConfigLoader.parse("pools: {p: {capacity: 10}}\nclasses: {a: {reservedShare: 1}}\n")
            .estimation();
    assertThat(d.tokenCacheChars()).isEqualTo(4L << 20);
    assertThat(d.tokenCacheMinChars()).isEqualTo(32);

    SluiceConfig.Estimation off =
        ConfigLoader.parse(
                """
                pools: {p: {capacity: 10}}
                classes: {a: {reservedShare: 1}}
                estimation: {tokenCacheChars: 0, tokenCacheMinChars: 128}
                """)
            .estimation();
    assertThat(off.tokenCacheChars()).isZero();
    assertThat(off.tokenCacheMinChars()).isEqualTo(128);

    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    """
                    pools: {p: {capacity: 10}}
                    classes: {a: {reservedShare: 1}}
                    estimation: {tokenCacheChars: -5}
                    """))
        .hasMessageContaining("estimation.tokenCacheChars");
  }

  @Test
  void parse_learnedReserve_defaultsValuesAndFieldNamedErrors() {
    SluiceConfig d =
        ConfigLoader.parse(
            """
            pools: {p: {capacity: 10}}
            classes: {a: {reservedShare: 1}}
            """);
    assertThat(d.estimation().learnedReserve())
        .isEqualTo(io.sluice.core.estimate.OutputReserves.Settings.DEFAULTS);
    assertThat(d.classes().get("a").reserveQuantile()).isEqualTo(0.95);

    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    """
                    pools: {p: {capacity: 10}}
                    classes: {a: {reservedShare: 1, reserveQuantile: 1.0}}
                    estimation: {learnedReserve: {warmup: 0, halfLife: x, maxKeys: -1, tenantKeys: 3, speed: 1, confidence: 1.5, poolPrior: 2, shareInterval: 50ms, shareWindow: x}}
                    """))
        .hasMessageContaining("classes.a.reserveQuantile: 1.0 (expected: a number in 0.5..0.999)")
        .hasMessageContaining("estimation.learnedReserve.warmup: 0 (expected: an integer in 1..")
        .hasMessageContaining("estimation.learnedReserve.halfLife")
        .hasMessageContaining("estimation.learnedReserve.maxKeys: -1")
        .hasMessageContaining("estimation.learnedReserve.tenantKeys: 3 (expected: true or false)")
        .hasMessageContaining("estimation.learnedReserve.speed: unknown key")
        .hasMessageContaining(
            "estimation.learnedReserve.confidence: 1.5 (expected: a number in 0.5..0.999)")
        .hasMessageContaining("estimation.learnedReserve.poolPrior: 2 (expected: true or false)")
        .hasMessageContaining(
            "estimation.learnedReserve.shareInterval: 50ms (expected: a duration in 100ms..10m)")
        .hasMessageContaining("estimation.learnedReserve.shareWindow: \"x\" (expected: a duration");
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    """
                    pools: {p: {capacity: 10}}
                    classes: {a: {reservedShare: 1}}
                    estimation: {learnedReserve: {shareInterval: 1m, shareWindow: 30s}}
                    """))
        .hasMessageContaining(
            "estimation.learnedReserve.shareWindow: 30s (expected: a duration in"
                + " estimation.learnedReserve.shareInterval (1m)..168h)");
  }

  @Test
  void parse_reservedSharesAboveOne_isAnError() {
    String yaml =
        """
        pools: {p: {capacity: 10}}
        classes:
          a: {reservedShare: 0.7}
          b: {reservedShare: 0.7}
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .hasMessageContaining("classes.*.reservedShare: sum is 1.4");
  }

  @Test
  void parse_minimalConfig_fillsDefaults() {
    SluiceConfig c =
        ConfigLoader.parse(
            """
            pools: {gpu: {capacity: 1000}}
            classes: {interactive: {reservedShare: 1.0}}
            signals:
              tenant:
                - dynamicMetadata: {namespace: envoy.filters.http.jwt_authn, path: payload.org}
            """);
    assertThat(c.pools().get("gpu").retryAfterMin()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.unmatched().pool()).isEqualTo("gpu");
    assertThat(c.unmatched().requestClass()).isEqualTo("interactive");
    assertThat(c.signals().get(SluiceConfig.Signal.TENANT))
        .containsExactly(
            new Source.DynamicMetadata(
                "envoy.filters.http.jwt_authn", java.util.List.of("payload", "org")));
    assertThat(c.signals().get(SluiceConfig.Signal.CLASS)).isEmpty();
  }

  @Test
  void parse_notYaml_isOneClearError() {
    assertThatThrownBy(() -> ConfigLoader.parse("pools: [unclosed"))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .startsWith("(document): not valid YAML"));
  }

  @Test
  void parse_yamlSyntaxError_keepsSnakeYamlsLineAndColumn() {
    String yaml = "pools:\n  default: {capacity: 10}\nclasses:\n  c: {reservedShare: [1.0}\n";
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .startsWith("(document): not valid YAML at line 4, column ")
                    .contains("expected ','"));
  }
}
