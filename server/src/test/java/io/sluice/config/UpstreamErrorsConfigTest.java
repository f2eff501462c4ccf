package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The {@code upstreamErrors} section: defaults, overrides by pool and route, errors by path. */
class UpstreamErrorsConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}, q: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  @Test
  void absent_rewritesWithTheProvidersBodyReplaced_retryAfterOneSecond() {
    UpstreamErrorsPolicy p = ConfigLoader.parse(BASE).section(UpstreamErrorsSection.SECTION);
    assertThat(p).isEqualTo(UpstreamErrorsPolicy.DEFAULTS);
    assertThat(p.rule("p", "chat"))
        .isEqualTo(new UpstreamErrorsPolicy.Rule(true, false, Duration.ofSeconds(1)));
  }

  @Test
  void overrides_routeWinsOverPool_unsetKeysFromTheTopLevel_writtenBackTheSame() {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                upstreamErrors:
                  retryAfter: 3s
                  pools: {q: {keepProviderBody: true}}
                  routes: {chat: {rewrite: false}}
                """);
    UpstreamErrorsPolicy p = c.section(UpstreamErrorsSection.SECTION);
    assertThat(p.rule("p", "chat"))
        .isEqualTo(new UpstreamErrorsPolicy.Rule(false, false, Duration.ofSeconds(3)));
    assertThat(p.rule("q", "other"))
        .isEqualTo(new UpstreamErrorsPolicy.Rule(true, true, Duration.ofSeconds(3)));
    assertThat(p.rule("p", "other"))
        .isEqualTo(new UpstreamErrorsPolicy.Rule(true, false, Duration.ofSeconds(3)));
    String written = ConfigWriter.tree(c).get("upstreamErrors").toString();
    assertThat(written).contains("\"retryAfter\":\"3s\"").contains("\"routes\":{\"chat\"");
    assertThat(
            ConfigLoader.parse(BASE + "upstreamErrors: " + written)
                .section(UpstreamErrorsSection.SECTION))
        .isEqualTo(p);
  }

  @Test
  void badValues_areNamedByPath() {
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "upstreamErrors: {pools: {nope: {}}}"))
        .hasMessageContaining("upstreamErrors.pools")
        .hasMessageContaining("the name of a pool in pools");
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "upstreamErrors: {retryAfter: 0s}"))
        .hasMessageContaining("upstreamErrors.retryAfter")
        .hasMessageContaining("1s..1h");
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "upstreamErrors: {rewrit: true}"))
        .hasMessageContaining("upstreamErrors.rewrit");
  }
}
