package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.sluice.config.ConfigLoader;
import io.sluice.harness.RunReport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Smoke tests of the benchmark wiring: seconds, counts only, never timing. */
class ScenarioSmokeTest {

  @Test
  void policies_everyScenario_parse() {
    for (Scenario s : Scenario.all()) {
      assertThatCode(() -> ConfigLoader.parse(s.queueHoldYaml()))
          .as(s.name())
          .doesNotThrowAnyException();
      assertThatCode(() -> ConfigLoader.parse(s.concurrencyCapYaml()))
          .as(s.name())
          .doesNotThrowAnyException();
    }
    for (boolean batchFirst : new boolean[] {false, true}) {
      assertThatCode(() -> ConfigLoader.parse(ClassOrder.orderPolicy(batchFirst)))
          .doesNotThrowAnyException();
      assertThatCode(() -> ConfigLoader.parse(ClassOrder.slotsPolicy(batchFirst)))
          .doesNotThrowAnyException();
    }
    assertThatCode(Policies::embeddedDefaultOnFreePorts).doesNotThrowAnyException();
    assertThatCode(() -> ConfigLoader.parse(Floor.ADMIT_POLICY)).doesNotThrowAnyException();
    assertThatCode(() -> ConfigLoader.parse(Floor.REJECT_POLICY)).doesNotThrowAnyException();
  }

  @Test
  void classOrder_policies_differOnlyInTheOrderOfTheClasses() {
    for (String[] p :
        List.of(
            new String[] {ClassOrder.orderPolicy(false), ClassOrder.orderPolicy(true)},
            new String[] {ClassOrder.slotsPolicy(false), ClassOrder.slotsPolicy(true)})) {
      assertThat(p[0]).isNotEqualTo(p[1]);
      assertThat(p[0].indexOf("  interactive:")).isLessThan(p[0].indexOf("  batch:"));
      assertThat(p[1].indexOf("  batch:")).isLessThan(p[1].indexOf("  interactive:"));
      assertThat(ConfigLoader.parse(p[0]).classes()).isEqualTo(ConfigLoader.parse(p[1]).classes());
    }
  }

  @Test
  void fairShares_waterFilling_smallDemandsAreMetAndTheRestSplitEvenly() {
    RunReport r =
        report(
            Map.of(
                "small", new RunReport.Split(10, 10),
                "big1", new RunReport.Split(100, 45),
                "big2", new RunReport.Split(100, 45)),
            100);
    Map<String, Double> shares = Tables.fairShares(r);
    assertThat(shares.get("small")).isEqualTo(10.0);
    assertThat(shares.get("big1")).isEqualTo(45.0);
    assertThat(shares.get("big2")).isEqualTo(45.0);
    assertThat(Tables.jain(r)).isEqualTo(1.0);
    assertThat(Tables.minShareRatio(r, "big2")).isEqualTo(1.0);
  }

  @Test
  void scenario_twoSecondRun_countsAddUpForEverySystem(@TempDir Path dir) throws Exception {
    Scenario s = Scenario.named("cancel").scaled(0.1); // 2 s of arrivals
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<RunReport> reports =
        BenchMain.runOne(s, dir, new PrintStream(buf, true, StandardCharsets.UTF_8), false);
    assertThat(reports)
        .extracting(RunReport::system)
        .containsExactly("no admission", "concurrency cap", "sluice");
    for (RunReport r : reports) {
      assertThat(r.outcomes().offered()).as(r.system()).isPositive();
      assertThat(r.outcomes().accountedFor()).as(r.system()).isEqualTo(r.outcomes().offered());
      assertThat(r.outcomes().attempts() + r.outcomes().unsent())
          .as(r.system())
          .isEqualTo(r.outcomes().offered() + r.outcomes().retries());
      assertThat(r.refusals().withoutRetryAfter()).as(r.system()).isZero();
    }
    assertThat(reports.get(0).outcomes().offered())
        .isEqualTo(reports.get(2).outcomes().offered()); // same arrivals
    assertThat(Files.list(dir).map(p -> p.getFileName().toString()))
        .contains("cancel.md", "cancel-timeline.png", "cancel-rejections.png");
    // the waste split, with the served-on-arrival reference row (its clients hang up)
    assertThat(Files.readString(dir.resolve("cancel.md")))
        .contains(
            "| on hang-ups the wait caused |",
            "| the workload's own hang-ups |",
            "| *every request served on arrival, full speed* |",
            "caused by admission (target <= 2%: ");
    for (RunReport r : reports) {
      // per-attempt token counts and the upstream's totals are read at different instants: at
      // most a token in flight per request that ended early apart
      long slack = r.outcomes().cancelled() + r.outcomes().deadlineMissed();
      assertThat(r.tokens().wasted() + slack)
          .as(r.system())
          .isGreaterThanOrEqualTo(
              r.tokens().onHangUps()
                  + r.tokens().onHangUpsAfterWaiting()
                  + r.tokens().onMissedDeadlines());
      assertThat(r.tokens().wastedByAdmission() + slack)
          .as(r.system())
          .isGreaterThanOrEqualTo(
              r.tokens().onHangUpsAfterWaiting() + r.tokens().onMissedDeadlines());
    }
  }

  private static RunReport report(Map<String, RunReport.Split> tenants, long completed) {
    return new RunReport(
        "t",
        1,
        new RunReport.Outcomes(210, 210, completed, 0, 0, 0, 0, 0, Map.of(), 0, 0, Map.of(), 0),
        new RunReport.Refusals(Map.of(), 0, 0, Map.of()),
        new RunReport.Ttft(Map.of(), Map.of()),
        Map.of(),
        tenants,
        List.of(),
        List.of(),
        new RunReport.Tokens(0, 0, 0, 0, 0, 0, 0, 0),
        new RunReport.Upstream(0, 1));
  }
}
