package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.emulator.FilterConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cold-throttle} and {@code cold-knee} (issue 31) at a small scale: they run, every request
 * is accounted for, the adaptive limit stays within its bounds, the tables and charts come out. No
 * timing and no target is checked (the machine is shared).
 */
class ColdAdaptiveSmokeTest {

  @Test
  void policies_startWhereAsked() {
    ColdKnee k = new ColdKnee();
    var floor = ConfigLoader.parse(k.adaptive("floor")).pools().get("llm");
    assertThat(floor.maxRequests()).isEqualTo(ColdKnee.CEILING);
    assertThat(floor.adaptive().minRequests()).isEqualTo(ColdKnee.FLOOR);
    assertThat(floor.adaptive().start()).isEqualTo(0.0);
    assertThat(ConfigLoader.parse(k.adaptive("0.25")).pools().get("llm").adaptive().start())
        .isEqualTo(0.25);
    String redis = ColdAdaptive.onRedis(k.adaptive("ceiling"), "127.0.0.1:1", "p_");
    assertThat(redis).contains("BACKEND_TYPE: redis", "keyPrefix: p_");
  }

  @Test
  void coldThrottle_bothBodyModes_tabulatesAndCharts(@TempDir Path dir) throws Exception {
    ColdAdaptive.ColdThrottle t = new ColdAdaptive.ColdThrottle();
    t.quiet = true;
    t.classes = AdaptiveBenchSmokeTest.tiny();
    t.ceiling = 8;
    t.throttle = 3;
    t.load = 2.0;
    t.before = 1;
    t.outage = 1;
    t.after = 1;
    t.runs = List.of("static", "none", "adaptive");
    t.warmup = 0;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream o = new PrintStream(buf, true, StandardCharsets.UTF_8);
    for (FilterConfig.BodyMode mode :
        List.of(FilterConfig.BodyMode.STREAMED, FilterConfig.BodyMode.NONE)) {
      List<AdaptiveRuns.Result> results = t.run(mode, o);
      assertThat(results)
          .extracting(AdaptiveRuns.Result::adaptive)
          .containsExactly(false, false, true);
      for (AdaptiveRuns.Result r : results) {
        assertThat(r.report().outcomes().accountedFor())
            .as(r.name())
            .isEqualTo(r.report().outcomes().offered());
      }
      // safety: the adaptive pool never admits above its ceiling
      assertThat(results.get(2).samples())
          .allMatch(s -> s.limitRequests() >= t.floor() && s.limitRequests() <= 8)
          .allMatch(s -> s.requestsInFlight() <= 8);
      String md = t.report(results, mode);
      assertThat(md).contains("| static 8 (", "| no admission (", "| adaptive 8 (", "× static");
      Path png = Throttle.chart(results, dir.resolve("t-" + mode + ".png"));
      assertThat(Files.size(png)).isPositive();
    }
  }

  @Test
  void coldKnee_startsSideBySide_tabulatesAndCharts(@TempDir Path dir) throws Exception {
    ColdKnee k = new ColdKnee();
    k.quiet = true;
    k.classes = AdaptiveBenchSmokeTest.tiny();
    k.durationSeconds = 2;
    k.load = 0.5;
    k.skipSeconds = 1;
    k.runs = List.of("right", "ceiling", "floor");
    k.warmup = 0;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<AdaptiveRuns.Result> results = k.run(new PrintStream(buf, true, StandardCharsets.UTF_8));
    assertThat(results)
        .extracting(AdaptiveRuns.Result::adaptive)
        .containsExactly(false, true, true);
    for (AdaptiveRuns.Result r : results) {
      assertThat(r.report().outcomes().accountedFor())
          .as(r.name())
          .isEqualTo(r.report().outcomes().offered());
      assertThat(r.samples()).as(r.name()).allMatch(s -> s.limitRequests() <= ColdKnee.CEILING);
    }
    // the ceiling start begins at the ceiling, the floor start at the floor
    assertThat(results.get(1).samples().get(0).limitRequests()).isEqualTo(ColdKnee.CEILING);
    assertThat(results.get(2).samples().get(0).limitRequests()).isEqualTo(ColdKnee.FLOOR);
    String md = k.report(results);
    assertThat(md).contains("| static 16 (right) |", "| adaptive, start ceiling |", "× right");
    Path png = Knee.chart(results, dir.resolve("k.png"));
    assertThat(Files.size(png)).isPositive();
  }
}
