package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class FloorPoolTest {
  @Test
  void pooledMedian_isOverEveryRoundOfEveryRun_notTheMedianOfRunMedians() {
    FloorPool pool = new FloorPool();
    pool.add("llm", "sluice", new double[] {0.80, 0.81, 0.82}); // a slow run: median 0.81
    pool.add("llm", "sluice", new double[] {0.90, 0.99, 1.00}); // median 0.99
    pool.add("llm", "sluice", new double[] {0.95, 0.96, 0.97}); // median 0.96
    FloorPool.Pooled p = pool.pooled("llm", "sluice");
    assertThat(p.rounds()).isEqualTo(9);
    // sorted: .80 .81 .82 .90 .95 .96 .97 .99 1.00 → the fifth
    assertThat(p.median()).isEqualTo(0.95);
    assertThat(p.lowerQuartile()).isEqualTo(0.82);
    assertThat(p.upperQuartile()).isEqualTo(0.97);
    assertThat(p.runMedians()).containsExactly(0.81, 0.99, 0.96);
  }

  @Test
  void ratios_arePairedByRound_withTheNoOpsRoundOfTheSameRun() {
    FloorPool pool = new FloorPool();
    List<ClosedLoop.Result> noop = List.of(result(1000), result(2000));
    List<ClosedLoop.Result> mine = List.of(result(900), result(1000));
    pool.add("oneshot", "sluice", mine, noop);
    FloorPool.Pooled p = pool.pooled("oneshot", "sluice");
    assertThat(p.rounds()).isEqualTo(2);
    assertThat(p.median()).isCloseTo(0.70, within(1e-9)); // (0.9 + 0.5) / 2
  }

  @Test
  void table_leavesOutTheNoOp_andNamesEachRun() {
    FloorPool pool = new FloorPool();
    pool.add("rls", "noop", new double[] {1, 1});
    pool.add("rls", "sluice", new double[] {0.9, 1.0});
    pool.add("rls", "noop", new double[] {1, 1});
    pool.add("rls", "sluice", new double[] {0.94, 0.96});
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    pool.print(
        new PrintStream(bytes, true, StandardCharsets.UTF_8), "rls", List.of("noop", "sluice"));
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertThat(text).contains("rls, pooled over 2 runs");
    assertThat(text).contains("| sluice | 0.950 | 0.930–0.970 | 4 | 0.950 / 0.950 |");
    assertThat(text).doesNotContain("| noop |");
    assertThat(text).contains("rls sluice rounds, run by run: 0.900 1.000 | 0.940 0.960");
    assertThat(text).doesNotContain("rls noop rounds");
  }

  @Test
  void runs_needSeparateServers() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cli = new CommandLine(new Floor());
    cli.setErr(new java.io.PrintWriter(err, true, StandardCharsets.UTF_8));
    int rc = cli.execute("--runs", "2", "--shape", "oneshot", "--rounds", "1", "--duration", "1");
    assertThat(rc).isNotZero();
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--runs: 2").contains("--separate");
  }

  private static ClosedLoop.Result result(double perSecond) {
    return new ClosedLoop.Result((long) perSecond, 0, new org.HdrHistogram.Histogram(3), 1.0, 0);
  }
}
