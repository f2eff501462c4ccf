package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.mcp.McpPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The {@code mcp} section. */
class McpConfigTest {
  private static final String BASE =
      """
      pools: {gpu: {capacity: 100}, tool-slow: {capacity: 1000, maxRequests: 5}}
      classes: {c: {rank: 0}, tools: {rank: 1}}
      routes:
        - {name: mcp, match: {pathPrefix: /mcp}, pool: gpu, class: c}
        - {name: payments, match: {pathPrefix: /payments/mcp}, pool: gpu, class: c}
      """;

  @Test
  void absent_off() {
    assertThat(ConfigLoader.parse(BASE).section(McpSection.SECTION)).isEqualTo(McpPolicy.DEFAULTS);
  }

  @Test
  void section_isRead_andWrittenBackTheSame() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                mcp:
                  enabled: true
                  routes: [mcp, payments]
                  unknownTools: refuse
                  maxBatch: 8
                  tools:
                    - {name: pdf_render, pool: tool-slow, class: tools, deadline: 20s}
                    - {name: "*", server: payments, pool: tool-slow}
                """);
    McpPolicy p = c.section(McpSection.SECTION);
    assertThat(p.enabled()).isTrue();
    assertThat(p.routes()).containsExactlyInAnyOrder("mcp", "payments");
    assertThat(p.unknownTools()).isEqualTo(McpPolicy.UnknownTools.REFUSE);
    assertThat(p.maxBatch()).isEqualTo(8);
    assertThat(p.tools())
        .containsExactly(
            new McpPolicy.Tool("pdf_render", null, "tool-slow", "tools", Duration.ofSeconds(20)),
            new McpPolicy.Tool("*", "payments", "tool-slow", null, Duration.ZERO));
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(McpSection.SECTION)).isEqualTo(p);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        mcp:
                          enabled: true
                          routes: [nope]
                          maxBatch: 0
                          tools:
                            - {name: a, pool: gone, class: none, server: nowhere, deadline: 2d}
                        """))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("mcp.routes[0]")
        .hasMessageContaining("mcp.maxBatch")
        .hasMessageContaining("mcp.tools[0].pool")
        .hasMessageContaining("mcp.tools[0].class")
        .hasMessageContaining("mcp.tools[0].server")
        .hasMessageContaining("mcp.tools[0].deadline");
  }
}
