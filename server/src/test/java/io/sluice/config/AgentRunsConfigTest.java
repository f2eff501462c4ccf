package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.turn.AgentRunsPolicy;
import org.junit.jupiter.api.Test;

/** The {@code agentRuns} section's {@code failureMode} (issue 37): read, written back, checked. */
class AgentRunsConfigTest {
  private static final String BASE =
      """
      pools: {gpu: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: r, match: {pathPrefix: /}, pool: gpu, class: c}]
      """;

  @Test
  void failureMode_absentFollowsQuotas_closedIsRead_andWrittenBackTheSame() throws Exception {
    AgentRunsPolicy absent = ConfigLoader.parse(BASE).section(AgentRunsSection.SECTION);
    assertThat(absent.failureMode()).isNull();
    assertThat(absent.failsOpen()).isTrue();
    assertThat(absent.failureModeOr(TenantQuotas.FailureMode.CLOSED).failsOpen()).isFalse();
    SluiceConfig c = ConfigLoader.parse(BASE + "agentRuns: {enabled: true, failureMode: closed}\n");
    AgentRunsPolicy p = c.section(AgentRunsSection.SECTION);
    assertThat(p.failureMode()).isEqualTo(TenantQuotas.FailureMode.CLOSED);
    assertThat(p.failureModeOr(TenantQuotas.FailureMode.OPEN)).as("its own wins").isEqualTo(p);
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(AgentRunsSection.SECTION)).isEqualTo(p);
  }

  @Test
  void failureMode_badValue_namedWithItsPath() {
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "agentRuns: {failureMode: sometimes}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("agentRuns.failureMode");
  }
}
