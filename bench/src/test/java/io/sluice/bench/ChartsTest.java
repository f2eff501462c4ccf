package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.harness.RunReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChartsTest {
  private static final double NAN = Double.NaN;

  static RunReport.Second second(int s, double ttftP95Millis) {
    return new RunReport.Second(s, 1, 1, 0, 1, 0, 1, ttftP95Millis, ttftP95Millis);
  }

  @Test
  void ttftSeries_secondsWithoutFirstTokens_areGapsNotJoined() {
    List<RunReport.Second> timeline =
        List.of(
            second(0, 100),
            second(1, NAN),
            second(2, NAN),
            second(3, 2500),
            second(4, NAN),
            second(5, 300));
    Charts.Gapped g = Charts.ttftP95Seconds(timeline);
    assertThat(g.x()).containsExactly(0, 1, 2, 3, 4, 5);
    assertThat(g.y()[0]).isEqualTo(0.1);
    assertThat(g.y()[1]).isNaN();
    assertThat(g.y()[2]).isNaN();
    assertThat(g.y()[3]).isEqualTo(2.5);
    assertThat(g.y()[4]).isNaN();
    assertThat(g.y()[5]).isEqualTo(0.3);
    assertThat(g.points()).isEqualTo(3);
  }

  @Test
  void ttftSeries_noData_noPoints() {
    assertThat(Charts.ttftP95Seconds(List.of(second(0, NAN), second(1, NAN))).points()).isZero();
    assertThat(Charts.ttftP95Seconds(List.of()).points()).isZero();
  }

  @Test
  void timeline_withGaps_rendersAPng(@TempDir Path dir) throws Exception {
    List<RunReport.Second> timeline = List.of(second(0, 100), second(1, NAN), second(2, 400));
    RunReport r =
        new RunReport(
            "sluice",
            3,
            new RunReport.Outcomes(3, 3, 3, 0, 0, 0, 0, 0, Map.of(), 0, 0, Map.of(), 0),
            new RunReport.Refusals(Map.of(), 0, 0, Map.of()),
            new RunReport.Ttft(Map.of(), Map.of()),
            Map.of(),
            Map.of(),
            List.of(),
            timeline,
            new RunReport.Tokens(0, 0, 0, 0, 0, 0, 0, 0),
            new RunReport.Upstream(0, 1));
    Path png = Charts.timeline(List.of(r), "gaps", dir.resolve("t.png"));
    assertThat(png).exists();
    assertThat(Files.size(png)).isPositive();
  }
}
