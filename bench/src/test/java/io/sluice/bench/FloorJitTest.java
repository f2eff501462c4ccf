package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bench.FloorJit.Cycle;
import io.sluice.bench.FloorJit.Decision;
import io.sluice.bench.FloorJit.State;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The floor's warm-up ends when every server's JIT has settled: in its last warm cycle each
 * server's compiler threads took less than the settle share of its CPU, with {@code --warmup} as
 * the least and {@code --warmup-max} as the most (then it gives up and names the servers).
 */
class FloorJitTest {
  private static final double SHARE = 0.02;
  private static final double MIN = 45;
  private static final double MAX = 300;

  /** noop's and sluice's last warm cycle: compiler ns of 1 s of process CPU at these shares. */
  private static Map<String, Cycle> cycle(double noop, double sluice) {
    Map<String, Cycle> m = new LinkedHashMap<>();
    m.put("noop", new Cycle(Math.round(noop * 1e9), 1_000_000_000L));
    m.put("sluice", new Cycle(Math.round(sluice * 1e9), 1_000_000_000L));
    return m;
  }

  @Test
  void everyServerBelowTheShare_pastTheLeast_isSettled() {
    assertThat(FloorJit.decide(cycle(0.004, 0.019), SHARE, 50, MIN, MAX))
        .isEqualTo(new Decision(State.SETTLED, List.of()));
  }

  @Test
  void oneServerStillCompiling_isNotYet_andNamed() {
    // the quiet run's Sluice at 55 s: its compiler threads about 6 % of its CPU, the no-op's < 1 %
    assertThat(FloorJit.decide(cycle(0.004, 0.06), SHARE, 55, MIN, MAX))
        .isEqualTo(new Decision(State.NOT_YET, List.of("sluice")));
  }

  @Test
  void aShareAtTheLimit_isNotSettled() {
    assertThat(FloorJit.decide(cycle(0.004, 0.02), SHARE, 55, MIN, MAX).state())
        .isEqualTo(State.NOT_YET);
  }

  @Test
  void settledBeforeTheLeast_isNotYet() {
    assertThat(FloorJit.decide(cycle(0.0, 0.0), SHARE, 44.9, MIN, MAX).state())
        .isEqualTo(State.NOT_YET);
  }

  @Test
  void stillCompilingAtTheMost_givesUp_andNamesTheServer() {
    assertThat(FloorJit.decide(cycle(0.03, 0.06), SHARE, 300, MIN, MAX))
        .isEqualTo(new Decision(State.GAVE_UP, List.of("noop", "sluice")));
    assertThat(FloorJit.decide(cycle(0.004, 0.06), SHARE, 301, MIN, MAX))
        .isEqualTo(new Decision(State.GAVE_UP, List.of("sluice")));
  }

  @Test
  void noCycleYet_isNotSettled_evenPastTheLeast() {
    assertThat(FloorJit.decide(Map.of(), SHARE, 60, MIN, MAX).state()).isEqualTo(State.NOT_YET);
  }

  @Test
  void aShareOfZero_isTheFixedWarmUp() {
    assertThat(FloorJit.decide(Map.of(), 0, 44, MIN, MAX).state()).isEqualTo(State.NOT_YET);
    assertThat(FloorJit.decide(Map.of(), 0, 45, MIN, MAX).state()).isEqualTo(State.SETTLED);
    assertThat(FloorJit.decide(cycle(0.5, 0.5), 0, 45, MIN, MAX).state()).isEqualTo(State.SETTLED);
  }

  @Test
  void aServerThatUsedNoCpu_doesNotHoldTheWarmUp() {
    assertThat(new Cycle(5, 0).share()).isZero();
    Map<String, Cycle> unread = Map.of("noop", new Cycle(0, 0));
    assertThat(FloorJit.decide(unread, SHARE, 45, MIN, MAX).state()).isEqualTo(State.SETTLED);
  }

  @Test
  void compilerCpu_countsNewThreads_andNoneThatEnded() {
    // thread 11 compiled 3 ms more, thread 12 started with 2 ms, thread 10 ended
    Map<String, Long> before = Map.of("10", 9_000_000L, "11", 1_000_000L);
    Map<String, Long> after = Map.of("11", 4_000_000L, "12", 2_000_000L);
    assertThat(FloorJit.grown(before, after)).isEqualTo(5_000_000L);
  }

  @Test
  void compilerThreads_areC1AndC2_byTheirKernelName() {
    assertThat(FloorJit.isCompiler("C2 CompilerThre")).isTrue();
    assertThat(FloorJit.isCompiler("C1 CompilerThre")).isTrue();
    assertThat(FloorJit.isCompiler("grpc-default-wo")).isFalse();
    assertThat(FloorJit.isCompiler("GC Thread#0")).isFalse();
  }

  @Test
  void thisJvmsCompilerThreads_areReadFromProcfs() {
    long self = ProcessHandle.current().pid();
    if (java.nio.file.Files.exists(java.nio.file.Path.of("/proc/self/task"))) {
      assertThat(FloorJit.compilers(self)).isNotEmpty();
    }
  }
}
