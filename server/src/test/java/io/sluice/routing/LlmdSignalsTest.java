package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.config.TrustedHeaders;
import io.sluice.core.policy.Tenant;
import org.junit.jupiter.api.Test;

/**
 * llm-d's trusted headers mapped to Sluice's class and tenant through the operator's {@code
 * signals}: the objective name through {@code llmD.objectives}, the fairness id as the tenant; a
 * client's copy is read only when the operator declared the header trusted.
 */
class LlmdSignalsTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes:
        interactive: {rank: 0, reservedShare: 0.5}
        standard: {rank: 1, reservedShare: 0.3}
        batch: {rank: 2, reservedShare: 0.2}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: standard}]
      llmD:
        priorityClasses: {interactive: 50, standard: 0, batch: -1000}
        objectives: {premium-traffic: {priority: 100}, sheddable: {priority: -1}}
      """;

  private static final String TRUSTED =
      BASE
          + """
          signals:
            class: [{header: x-llm-d-inference-objective}]
            tenant: [{header: x-llm-d-inference-fairness-id}]
          """;

  private static SignalRequest llmd(String objective, String fairnessId) {
    return new SignalRequest()
        .header("x-llm-d-inference-objective", objective)
        .header("x-llm-d-inference-fairness-id", fairnessId);
  }

  @Test
  void trustedObjective_mapsToItsClass_fairnessIdIsTheTenant() {
    RequestResolver r = new RequestResolver(ConfigLoader.parse(TRUSTED));
    ResolvedRequest premium = r.resolve(llmd("premium-traffic", "team-a"), 0);
    assertThat(premium.requestClass().name()).isEqualTo("interactive");
    assertThat(premium.tenant().id()).isEqualTo("team-a");
    assertThat(r.resolve(llmd("sheddable", "team-b"), 0).requestClass().name()).isEqualTo("batch");
    // a class name is still a class name; an unknown objective keeps the route's class
    assertThat(r.resolve(llmd("interactive", "t"), 0).requestClass().name())
        .isEqualTo("interactive");
    assertThat(r.resolve(llmd("no-such-objective", "t"), 0).requestClass().name())
        .isEqualTo("standard");
  }

  @Test
  void forgedObjectiveAndFairnessHeaders_areIgnored_unlessDeclaredTrusted() {
    SluiceConfig untrusted = ConfigLoader.parse(BASE + "signals: {class: [{metadata: x-c}]}\n");
    ResolvedRequest forged =
        new RequestResolver(untrusted).resolve(llmd("premium-traffic", "victim"), 0);
    assertThat(forged.requestClass().name()).isEqualTo("standard");
    assertThat(forged.tenant().id()).isEqualTo(Tenant.ANONYMOUS);
    // the embedded default trusts neither header either
    ResolvedRequest viaDefault =
        new RequestResolver(ConfigLoader.embeddedDefault())
            .resolve(llmd("interactive", "victim"), 0);
    assertThat(viaDefault.tenant().id()).isEqualTo(Tenant.ANONYMOUS);
  }

  @Test
  void llmdHeaders_areStrippedByTheShippedConfigs_soTrustingThemDrawsNoWarning() {
    assertThat(TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS)
        .contains("x-llm-d-inference-objective", "x-llm-d-inference-fairness-id");
    assertThat(TrustedHeaders.warnings(ConfigLoader.parse(TRUSTED))).isEmpty();
  }
}
