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
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/**
 * The restart bench's wiring, window arithmetic and verdicts (no run: that needs Redis, minutes).
 */
class RestartTest {

  @Test
  void policy_parses_adaptivePoolLearnedReserveSharedStoreAndTheGivenPort() {
    SluiceConfig c = ConfigLoader.parse(Restart.policy("127.0.0.1:6379", "sluice_bench_r_", 4711));
    assertThat(c.quotas().keyPrefix()).isEqualTo("sluice_bench_r_");
    assertThat(c.rateLimit().env()).containsEntry("BACKEND_TYPE", "redis");
    assertThat(c.server().grpcPort()).isEqualTo(4711);
    var pool = c.pools().get("llm");
    assertThat(pool.adaptive().enabled()).isTrue();
    assertThat(pool.maxRequests()).isEqualTo(Restart.CEILING);
    assertThat(pool.adaptive().minRequests()).isEqualTo(Restart.FLOOR);
    assertThat(c.estimation().learnedReserve().enabled()).isTrue();
    assertThat(c.estimation().learnedReserve().warmup()).isEqualTo(Restart.RESERVE_WARMUP);
    assertThat(
            ConfigLoader.parse(Restart.policy("127.0.0.1:6379", "p_", 0, 12))
                .pools()
                .get("llm")
                .adaptive()
                .minRequests())
        .isEqualTo(12);
  }

  @Test
  void workload_warmUpThenMeasured_sameRate_overloaded() {
    Workload w = Restart.workload(30, 24, 1.5);
    assertThat(w.phases()).hasSize(2);
    double cap = LoadGenerator.capacityPerSecond(w, Scenario.UPSTREAM);
    assertThat(w.phases().get(1).ratePerSecond())
        .isCloseTo(1.5 * cap, org.assertj.core.data.Offset.offset(1e-6));
    assertThat(w.phases().get(0).ratePerSecond()).isEqualTo(w.phases().get(1).ratePerSecond());
    assertThat(Restart.workload(0, 24, 1.5).phases()).hasSize(1);
    assertThat(Restart.workload(30, 24, 1.5)).isEqualTo(w);
  }

  @Test
  void runs_names() {
    assertThat(Restart.RunSpec.named("one-halt").how()).isEqualTo(Restart.How.HALT);
    assertThat(Restart.RunSpec.named("one-halt").sameIdentity()).isTrue();
    assertThat(Restart.RunSpec.named("one-halt-new-id").sameIdentity()).isFalse();
    assertThat(Restart.RunSpec.named("rolling-drain").scope()).isEqualTo(Restart.Scope.ROLLING);
    assertThat(Restart.RunSpec.named("all-halt").restarted()).isEqualTo(3);
    assertThat(Restart.RunSpec.named("steady").restarted()).isZero();
    for (String n : Restart.DEFAULT_RUNS.split(",")) {
      assertThat(Restart.RunSpec.named(n).key()).isEqualTo(n);
    }
    assertThatThrownBy(() -> Restart.RunSpec.named("some")).hasMessageContaining("rolling-drain");
  }

  @Test
  void optionsOutOfBounds_areUsageErrors() {
    assertThat(BenchCliTest.run("restart", "--duration", "10").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("restart", "--window", "1").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("restart", "--warmup", "-1").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("restart", "--floor", "0").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("restart", "--pre-stop", "31").code()).isEqualTo(2);
  }

  @Test
  void sum_countsTheHundredMillisecondBucketsOfAWindow() {
    AtomicIntegerArray b = new AtomicIntegerArray(100);
    for (int i = 0; i < 100; i++) {
      b.set(i, 1);
    }
    assertThat(Restart.sum(b, 2, 3)).isEqualTo(10);
    assertThat(Restart.sum(b, 9.5, 20)).isEqualTo(5); // clipped at the end
    assertThat(Restart.sum(b, -1, 0.5)).isEqualTo(5);
  }

  @Test
  void parseReserve_coarseKeyWithTheMostSamples_tenantKeysIgnored() {
    String json =
        """
        {"enabled" : true, "estimates" : [
          {"pool" : "llm", "model" : "m", "scope" : "route", "tenant" : "acme",
           "samples" : 90, "warmed" : true, "absoluteTokens" : 111.0},
          {"pool" : "llm", "model" : "m", "scope" : "route",
           "samples" : 40, "warmed" : true, "absoluteTokens" : 287.5},
          {"pool" : "llm", "model" : "m", "scope" : "class",
           "samples" : 3, "warmed" : false, "absoluteTokens" : 20.0},
          {"pool" : "other", "model" : "m", "scope" : "route",
           "samples" : 900, "warmed" : true, "absoluteTokens" : 5.0}
        ]}
        """;
    Restart.Learned l = Restart.parseReserve(json);
    assertThat(l.reserveTokens()).isEqualTo(287.5);
    assertThat(l.reserveWarmed()).isTrue();
    assertThat(Restart.parseReserve("{\"estimates\" : []}").reserveTokens()).isNaN();
  }

  static Restart.Result result(
      String run, long before, long after, Restart.Learned was, Restart.Learned at) {
    Restart.RunSpec spec = Restart.RunSpec.named(run);
    String name = spec.name();
    RunReport r =
        new RunReport(
            name,
            10,
            new RunReport.Outcomes(
                100, 100, before + after, 0, 0, 0, 0, 0, Map.of(), 0, 0, Map.of(), 0),
            new RunReport.Refusals(Map.of(), 0, 0, Map.of()),
            new RunReport.Ttft(Map.of(), Map.of()),
            Map.of(),
            Map.of(),
            List.of(),
            List.of(),
            new RunReport.Tokens(0, 0, 0, 0, 0, 0, 0, 0),
            new RunReport.Upstream(8, 16));
    List<Restart.Replaced> replaced =
        spec.restarted() == 0
            ? List.of()
            : List.of(new Restart.Replaced(2, 45, 45.3, 300, was, at, at));
    return new Restart.Result(
        spec, r, 45, 10, before, after, 3, 0, 0, 1.0, 16, replaced, List.of(), new double[60]);
  }

  @Test
  void verdicts_ratioLimitAndReserve() {
    Restart.Learned was = new Restart.Learned(14, 290, true);
    List<Restart.Result> ok =
        List.of(
            result("steady", 70, 71, Restart.Learned.NONE, Restart.Learned.NONE),
            result("one-halt", 70, 66, was, new Restart.Learned(15, 280, true)));
    assertThat(RestartReport.verdicts(ok)).hasSize(3).allMatch(Verdict::pass);
    List<Restart.Result> bad =
        List.of(result("all-halt", 70, 40, was, new Restart.Learned(4, 3000, false)));
    assertThat(RestartReport.verdicts(bad)).hasSize(3).noneMatch(Verdict::pass);
    assertThat(RestartReport.report(bad, 5, 10))
        .contains("FAIL all halted at once: goodput", "40 / 70 = 0.57", "14 → 4", "cold (3000)");
  }
}
