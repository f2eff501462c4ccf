package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The replicas scenario's wiring and verdicts (no run: that needs Redis and minutes). */
class ReplicasTest {

  @Test
  void policy_parses_sharedStore_keyPrefixOfTheRun_poolAtTheUpstreamsSlots() {
    SluiceConfig c = ConfigLoader.parse(Replicas.policy("127.0.0.1:6379", "sluice_bench_x_"));
    assertThat(c.quotas().keyPrefix()).isEqualTo("sluice_bench_x_");
    assertThat(c.rateLimit().env()).containsEntry("BACKEND_TYPE", "redis");
    assertThat(c.rateLimit().env()).containsEntry("REDIS_URL", "127.0.0.1:6379");
    assertThat(c.pools().get("llm").maxRequests()).isEqualTo(Scenario.UPSTREAM.batchSlots());
    assertThat(c.classes()).containsKeys("interactive", "batch");
  }

  @Test
  void workload_twiceTheUpstreamsCapacity_twoClasses_sameSeedSameArrivals() {
    Workload w = Replicas.workload(30, 2.0);
    double cap = LoadGenerator.capacityPerSecond(w, Scenario.UPSTREAM);
    assertThat(w.phases()).hasSize(1);
    assertThat(w.phases().get(0).ratePerSecond())
        .isCloseTo(2 * cap, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(w.classes())
        .extracting(Workload.RequestClass::name)
        .containsExactly("interactive", "batch");
    assertThat(Replicas.workload(30, 2.0)).isEqualTo(w);
  }

  @Test
  void runs_names() {
    assertThat(Replicas.RunSpec.named("one").replicas()).isEqualTo(1);
    assertThat(Replicas.RunSpec.named("three-crash").kill()).isEqualTo(Replicas.Kill.CRASH);
    assertThat(Replicas.RunSpec.named("three-stop").kill()).isEqualTo(Replicas.Kill.STOP);
    assertThatThrownBy(() -> Replicas.RunSpec.named("four")).hasMessageContaining("three-stop");
  }

  @Test
  void durationOutOfBounds_isAUsageError() {
    assertThat(BenchCliTest.run("replicas", "--duration", "5").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("replicas", "--duration", "601").code()).isEqualTo(2);
  }

  static Replicas.Result result(Replicas.RunSpec spec, long completed, int peak, long leaked) {
    RunReport r =
        new RunReport(
            spec.name(),
            10,
            new RunReport.Outcomes(100, 100, completed, 0, 0, 0, 0, 0, Map.of(), 0, 0, Map.of(), 0),
            new RunReport.Refusals(Map.of(), 0, 0, Map.of()),
            new RunReport.Ttft(Map.of(), Map.of()),
            Map.of(),
            Map.of(),
            List.of(),
            List.of(),
            new RunReport.Tokens(0, 0, 0, 0, 0, 0, 0, 0),
            new RunReport.Upstream(8, 16));
    return new Replicas.Result(
        spec,
        r,
        peak,
        8,
        new long[spec.replicas()],
        16,
        10560,
        leaked,
        0,
        Double.NaN,
        Double.NaN,
        Double.NaN,
        List.of());
  }

  @Test
  void verdicts_peakGoodputAndLeaks() {
    List<Replicas.Result> ok =
        List.of(
            result(Replicas.RunSpec.named("one"), 100, 16, 0),
            result(Replicas.RunSpec.named("three"), 95, 16, 0),
            result(Replicas.RunSpec.named("three-crash"), 50, 16, 0));
    assertThat(ReplicasReport.verdicts(ok)).allMatch(Verdict::pass);
    // goodput is judged on the three replicas without a kill only
    assertThat(ReplicasReport.verdicts(ok)).filteredOn(v -> v.target().contains("95%")).hasSize(1);
    List<Replicas.Result> bad =
        List.of(
            result(Replicas.RunSpec.named("one"), 100, 16, 0),
            result(Replicas.RunSpec.named("three"), 94, 17, 1));
    assertThat(ReplicasReport.verdicts(bad)).filteredOn(v -> !v.pass()).hasSize(3);
    assertThat(ReplicasReport.report(bad, 14.5)).contains("FAIL 3 replicas: goodput", "94.0%");
  }
}
