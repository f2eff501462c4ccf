package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.policy.PoolPolicy;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProposalTest {
  static final Proposal.Names NAMES = new Proposal.Names("gpu", "interactive", 1.0, 2.0);

  private static Knee.Analysis kneeAt(int k) {
    java.util.List<StepResult> steps = new java.util.ArrayList<>();
    for (int c = 1; c <= 2 * k; c *= 2) {
      steps.add(KneeTest.ps(c, k, 0));
    }
    return Knee.analyse(steps);
  }

  @Test
  void static_isEightyPercentOfTheKnee_inWorkUnitsOfTheMix_andValidates() {
    Mix mix =
        Mix.parse(
            "requests:\n  - {weight: 3, promptTokens: 100, maxTokens: 50}\n  - {weight: 1, promptTokens: 500, maxTokens: 100}\n");
    Proposal p = Proposal.of(kneeAt(8), mix, 1.0, NAMES, "# header\n");
    // (3 x (100 + 2 x 50) + 1 x (500 + 2 x 100)) / 4 = 325
    assertThat(p.workPerRequest()).isEqualTo(325);
    assertThat(p.knee()).isEqualTo(8);
    assertThat(p.staticRequests()).isEqualTo(6);
    assertThat(p.staticCapacity()).isEqualTo(6 * 325);

    SluiceConfig c = ConfigLoader.parse(p.staticYaml());
    PoolPolicy pool = c.pools().get("gpu");
    assertThat(pool.maxRequests()).isEqualTo(6);
    assertThat(pool.capacityWorkUnits()).isEqualTo(1950);
    assertThat(pool.outputWeight()).isEqualTo(2.0);
    // one request of the mix costs what the pool would charge it
    assertThat(pool.workUnits(100, 50)).isEqualTo(200);
    var cls = c.classes().get("interactive");
    assertThat(cls.maxQueueItems()).isEqualTo(6);
    assertThat(cls.queueWorkShare()).isEqualTo(1.0);
    assertThat(p.staticYaml()).startsWith("# header\n");
  }

  @Test
  void adaptive_theKneeIsTheCeiling_aQuarterTheFloor() {
    Mix mix = Mix.parse("requests:\n  - {promptTokens: 100, maxTokens: 100}\n");
    Proposal p = Proposal.of(kneeAt(16), mix, 1.0, NAMES, "");
    assertThat(p.adaptiveMinRequests()).isEqualTo(4);
    assertThat(p.adaptiveYaml())
        .contains("    capacity: 4800 ")
        .contains("    maxRequests: 16 ")
        .contains("    adaptive:\n      enabled: true\n      minCapacity: 1200 ")
        .contains("      minRequests: 4 ")
        .contains("queue: {workShare: 1.0, maxItems: 16}");
    // a valid policy: the knee is the ceiling, a quarter of it the floor
    var pool = ConfigLoader.parse(p.adaptiveYaml()).pools().get("gpu");
    assertThat(pool.maxRequests()).isEqualTo(16);
    assertThat(pool.adaptive().enabled()).isTrue();
    assertThat(pool.adaptive().minRequests()).isEqualTo(4);
    assertThat(pool.adaptive().minCapacity()).isEqualTo(1200);
  }

  @Test
  void smallKnees_neverProposeZero() {
    Mix mix = Mix.parse("requests:\n  - {promptTokens: 10, maxTokens: 10}\n");
    Proposal p =
        Proposal.of(
            Knee.analyse(java.util.List.of(StepResult.of(1, 5, 100, Map.of()))),
            mix,
            1.0,
            NAMES,
            "");
    assertThat(p.staticRequests()).isEqualTo(1);
    assertThat(p.adaptiveMinRequests()).isEqualTo(1);
    ConfigLoader.parse(p.staticYaml());
  }

  @Test
  void promptsAsTheEndpointCountedThem_scaleTheInputWork() {
    Mix mix = Mix.parse("requests:\n  - {promptTokens: 100, maxTokens: 10}\n");
    assertThat(Proposal.workPerRequest(mix, 1.2, new Proposal.Names("p", "c", 1.0, 1.0)))
        .isEqualTo(130);
  }
}
