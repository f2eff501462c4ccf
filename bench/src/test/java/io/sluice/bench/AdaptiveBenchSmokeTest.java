package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.harness.Workload;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The knee and throttle scenarios (issue 16) at a small scale: they run, every request is accounted
 * for, the tables and charts come out. No timing, no target checked.
 */
class AdaptiveBenchSmokeTest {

  /** Short answers and deadlines, so a run drains in a few seconds. */
  static List<Workload.RequestClass> tiny() {
    return List.of(
        Workload.RequestClass.of(
            "interactive",
            "interactive",
            "/v1/chat/completions",
            0.6,
            100,
            200,
            5,
            15,
            Duration.ofSeconds(3),
            Duration.ofSeconds(2)),
        Workload.RequestClass.of(
            "batch",
            "batch",
            "/v1/chat/completions",
            0.4,
            100,
            200,
            10,
            20,
            Duration.ofSeconds(4),
            Duration.ofSeconds(3)));
  }

  @Test
  void policies_parse_adaptiveOnlyWhereAsked() {
    SluiceConfig right = ConfigLoader.parse(Knee.RunSpec.named("right").policy(""));
    assertThat(right.pools().get("llm").maxRequests()).isEqualTo(16);
    assertThat(right.pools().get("llm").adaptive().enabled()).isFalse();
    SluiceConfig wide = ConfigLoader.parse(Knee.RunSpec.named("adaptive-wide").policy(""));
    var p = wide.pools().get("llm");
    assertThat(p.maxRequests()).isEqualTo(32);
    assertThat(p.adaptive().enabled()).isTrue();
    assertThat(p.adaptive().minRequests()).isEqualTo(Knee.FLOOR);
    assertThat(p.adaptive().growBelow()).isEqualTo(1.2);
    assertThat(p.adaptive().shrinkAbove()).isEqualTo(1.5);
    SluiceConfig extra =
        ConfigLoader.parse(Knee.RunSpec.named("adaptive").policy("interval: 2s, minSamples: 20"));
    assertThat(extra.pools().get("llm").adaptive().interval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(extra.pools().get("llm").adaptive().minSamples()).isEqualTo(20);
    assertThatThrownBy(() -> Knee.RunSpec.named("medium")).hasMessageContaining("adaptive-wide");
  }

  @Test
  void knee_runsStaticAndAdaptive_tabulatesAndCharts(@TempDir Path dir) throws Exception {
    Knee k = new Knee();
    k.quiet = true;
    k.skipSeconds = 1;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<AdaptiveRuns.Result> results =
        k.run(
            List.of(Knee.RunSpec.named("right"), Knee.RunSpec.named("adaptive")),
            Knee.workload(tiny(), 1, 0.5),
            new PrintStream(buf, true, StandardCharsets.UTF_8));
    assertThat(results).extracting(AdaptiveRuns.Result::adaptive).containsExactly(false, true);
    for (AdaptiveRuns.Result r : results) {
      assertThat(r.report().outcomes().accountedFor())
          .as(r.name())
          .isEqualTo(r.report().outcomes().offered());
      assertThat(r.samples()).as(r.name()).isNotEmpty();
    }
    assertThat(results.get(0).samples()).allMatch(s -> s.limitRequests() == 16);
    assertThat(results.get(1).samples())
        .allMatch(s -> s.limitRequests() >= Knee.FLOOR && s.limitRequests() <= 32);
    String md = Knee.report(results, 0.5);
    assertThat(md)
        .contains("| static 16 (right) | 16 (static) |")
        .contains("| adaptive 32, defaults | 32 (ceiling), floor 4 |")
        .contains("limit at each second", "changes of the limit");
    Path png = Knee.chart(results, dir.resolve("knee.png"));
    assertThat(Files.size(png)).isPositive();
  }

  @Test
  void throttle_ceilingAndOutage_tabulatesAndCharts(@TempDir Path dir) throws Exception {
    Throttle t = new Throttle();
    t.quiet = true;
    t.ceiling = 2;
    t.maxRequests = 8;
    t.load = 2.0;
    t.runs = List.of("static", "adaptive");
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<AdaptiveRuns.Result> results =
        t.run(t.workload(tiny(), 1, 1, 1), new PrintStream(buf, true, StandardCharsets.UTF_8));
    assertThat(results).extracting(AdaptiveRuns.Result::adaptive).containsExactly(false, true);
    for (AdaptiveRuns.Result r : results) {
      assertThat(r.report().outcomes().accountedFor())
          .as(r.name())
          .isEqualTo(r.report().outcomes().offered());
      assertThat(r.report().byPhase()).hasSize(3);
    }
    String md = t.report(results);
    assertThat(md)
        .contains("| static 8 |", "| adaptive 8, defaults |")
        .contains("refusals without Retry-After", "recovery: limit at +0 s");
    Path png = Throttle.chart(results, dir.resolve("throttle.png"));
    assertThat(Files.size(png)).isPositive();
  }
}
