package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.routing.RequestResolver;
import io.sluice.routing.SignalSource;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code pools.<name>.mode} and {@code routes[].mode}: validation naming the field and the expected
 * value, the effective config's round trip, and which mode a request resolves to.
 */
class ShadowModeConfigTest {
  private static final String POLICY =
      """
      pools:
        gpu: {capacity: 1000, mode: %s}
        cpu: {capacity: 1000}
      classes: {interactive: {reservedShare: 1.0}}
      signals: {pool: [{metadata: x-sluice-pool}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat}, pool: gpu, class: interactive}
        - {name: embed, match: {pathPrefix: /v1/embeddings}, pool: gpu, class: interactive, mode: enforce}
        - {name: cheap, match: {pathPrefix: /v1/completions}, pool: cpu, class: interactive, mode: shadow}
      unmatched: {action: admit, pool: gpu, class: interactive}
      """;

  @Test
  void defaults_everyPoolEnforces_routesFollowTheirPool() throws Exception {
    SluiceConfig c = ConfigLoader.parse(POLICY.formatted("enforce"));
    assertThat(c.poolMode("gpu")).isEqualTo(SluiceConfig.Mode.ENFORCE);
    assertThat(c.poolMode("cpu")).isEqualTo(SluiceConfig.Mode.ENFORCE); // not set
    assertThat(c.routes().get(0).mode()).isNull(); // follows its pool
    assertThat(c.routes().get(1).mode()).isEqualTo(SluiceConfig.Mode.ENFORCE);
    assertThat(c.routes().get(2).mode()).isEqualTo(SluiceConfig.Mode.SHADOW);
    assertThat(
            ConfigLoader.parse("pools: {gpu: {capacity: 1}}\nclasses: {c: {}}\n").poolMode("gpu"))
        .isEqualTo(SluiceConfig.Mode.ENFORCE);
  }

  @Test
  void badValues_nameTheFieldAndTheExpectedValue() {
    String yaml =
        """
        pools: {gpu: {capacity: 1000, mode: observe}}
        classes: {interactive: {}}
        routes:
          - {name: chat, match: {path: /x}, class: interactive, mode: 1}
          - {name: two, match: {path: /y}, class: interactive, mode: {shadow: true}}
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .contains(
                        "pools.gpu.mode: \"observe\" (expected: one of enforce, shadow)",
                        "routes[0].mode: 1 (expected: one of enforce, shadow)",
                        "routes[1].mode: {\"shadow\":true} (expected: one of enforce, shadow)"));
  }

  @Test
  void effectiveConfig_showsTheModes_andLoadsBackTheSame() throws Exception {
    SluiceConfig c = ConfigLoader.parse(POLICY.formatted("shadow"));
    var tree = ConfigWriter.tree(c);
    assertThat(tree.at("/pools/gpu/mode").asText()).isEqualTo("shadow");
    assertThat(tree.at("/pools/cpu/mode").asText()).isEqualTo("enforce");
    assertThat(tree.at("/routes/0/mode").isMissingNode()).isTrue(); // follows its pool
    assertThat(tree.at("/routes/1/mode").asText()).isEqualTo("enforce");
    assertThat(tree.at("/routes/2/mode").asText()).isEqualTo("shadow");
    SluiceConfig back = ConfigLoader.parse(tree.toString());
    assertThat(back.poolModes()).isEqualTo(c.poolModes());
    assertThat(back.routes()).isEqualTo(c.routes());
  }

  @Test
  void aRequestsMode_isItsRoutesOwn_elseItsPools_eitherWay() throws Exception {
    RequestResolver shadowPool =
        new RequestResolver(ConfigLoader.parse(POLICY.formatted("shadow")));
    assertThat(shadow(shadowPool, "/v1/chat", null)).isTrue(); // pool gpu in shadow
    assertThat(shadow(shadowPool, "/v1/embeddings", null)).isFalse(); // the route enforces
    assertThat(shadow(shadowPool, "/v1/completions", null)).isTrue(); // the route's own
    assertThat(shadow(shadowPool, "/elsewhere", null)).isTrue(); // unmatched: its pool's
    assertThat(shadow(shadowPool, "/v1/chat", "cpu")).isFalse(); // moved to an enforcing pool
    RequestResolver enforcing =
        new RequestResolver(ConfigLoader.parse(POLICY.formatted("enforce")));
    assertThat(shadow(enforcing, "/v1/chat", null)).isFalse();
    assertThat(shadow(enforcing, "/v1/completions", null)).isTrue(); // per-route rollout
    assertThat(shadow(enforcing, "/elsewhere", null)).isFalse();
  }

  private static boolean shadow(RequestResolver r, String path, String pool) {
    Map<String, String> md = pool == null ? Map.of() : Map.of("x-sluice-pool", pool);
    SignalSource in =
        new SignalSource() {
          @Override
          public String metadata(String key) {
            return md.get(key);
          }

          @Override
          public String header(String name) {
            return null;
          }

          @Override
          public String path() {
            return path;
          }

          @Override
          public String dynamicMetadata(String namespace, java.util.List<String> keyPath) {
            return null;
          }

          @Override
          public String attribute(String name) {
            return null;
          }
        };
    return r.resolve(in, 0).subject(0).shadow();
  }
}
