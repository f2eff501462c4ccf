package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.harness.Workload;
import io.sluice.upstream.HttpHeaders;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The cold-greedy bench's setup and arithmetic (the run itself is the bench's). */
class ColdGreedyTest {
  @Test
  void policy_isTheEmbeddedDefaultsClassPrior_andTheLearnerAtItsDefaults() {
    SluiceConfig c = ConfigLoader.parse(ColdGreedy.policy());
    var d = ConfigLoader.embeddedDefault().classes().get("interactive");

    assertThat(c.classes().get("interactive").defaultOutputTokens())
        .isEqualTo(d.defaultOutputTokens());
    assertThat(c.classes().get("interactive").maxOutputTokens()).isEqualTo(d.maxOutputTokens());
    assertThat(c.estimation().learnedReserve())
        .isEqualTo(io.sluice.core.estimate.OutputReserves.Settings.DEFAULTS);
    assertThat(c.responses().estimateHeader()).isTrue();
    assertThat(ConfigLoader.parse(ColdGreedy.policy("p_", "127.0.0.1:6379")).quotas().keyPrefix())
        .isEqualTo("p_");
  }

  @Test
  void workload_eachSideIsItsOwnTenant_sameRate_capsAsStated() {
    ColdGreedy b = new ColdGreedy();
    Workload w = b.workload(30);

    assertThat(w.classes())
        .extracting(Workload.RequestClass::name, Workload.RequestClass::maxTokensMax)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("greedy", 4096),
            org.assertj.core.groups.Tuple.tuple("honest", 320));
    assertThat(w.tenants())
        .extracting(Workload.Tenant::name)
        .containsExactly("class:greedy", "class:honest");
  }

  @Test
  void windows_countCompletionsByArrival_andTheEstimateHeaderIsRead() {
    ColdGreedy.Result r =
        new ColdGreedy.Result(
            "x",
            List.of(
                new ColdGreedy.Seen("greedy", 1_000, true, 500),
                new ColdGreedy.Seen("greedy", 2_000, false, 500),
                new ColdGreedy.Seen("honest", 1_500, true, 320),
                new ColdGreedy.Seen("honest", 2_500, true, 320),
                new ColdGreedy.Seen("greedy", 61_000, true, 300)),
            90);

    assertThat(r.window(0, 30).ratio()).isEqualTo(0.5);
    assertThat(r.window(60, 90).honest()).isZero();
    assertThat(r.reservePerSecond("greedy")[1]).containsExactly(500, 500, 300);
    assertThat(
            ColdGreedy.outputReserve(
                HttpHeaders.of("x-sluice-estimate", "input=10;output=333;work=343")))
        .isEqualTo(333);
    assertThat(ColdGreedy.outputReserve(HttpHeaders.of())).isEqualTo(-1);
  }
}
