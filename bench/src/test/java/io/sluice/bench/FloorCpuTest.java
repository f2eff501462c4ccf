package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The floor's CPU method pairs each target with the no-op (and with {@code sluice}) round by round:
 * a machine that slows every server in one round moves both figures of that round, and the paired
 * difference stays; the difference of the two medians would not.
 */
class FloorCpuTest {
  @Test
  void aboveTheNoOp_isTheMedianOfEachRoundsDifference_notTheDifferenceOfMedians() {
    FloorCpu cpu = new FloorCpu();
    // three rounds; round 2 ran on a slow machine: every server's CPU per call doubled
    double[] noop = {10, 20, 11};
    double[] sluice = {13, 26, 14};
    double[] twin = {13.5, 26, 13.8};
    for (int r = 0; r < 3; r++) {
      window(cpu, "noop", noop[r], 1000);
      window(cpu, "sluice", sluice[r], 800);
      window(cpu, "sluice-twin", twin[r], 790);
    }
    String table = print(cpu);
    // sluice above the no-op, by round: 3, 6, 3 → median 3 (medians' difference would be 3 too,
    // but its range would not be 3–6); the twin against sluice: 0.5, 0, -0.2 → median 0
    assertThat(table)
        .contains("| sluice | 14.00 [13.00–26.00] | 14.00 [13.00–26.00] | 3.00 [3.00–6.00] |");
    assertThat(table)
        .contains(
            "| sluice-twin | 13.80 [13.50–26.00] | 13.80 [13.50–26.00] | 3.50 [2.80–6.00] |"
                + " 0.00 [-0.20–0.50] | 0.00 [-0.20–0.50] | 0.790 [0.79–0.79] |");
  }

  @Test
  void split_answersOnTheTransportAndOwnLogic_arePairedByRound() {
    FloorCpu cpu = new FloorCpu();
    // round 2 on a slow machine again: every server's CPU per call doubled
    double[] noop = {10, 20, 11};
    double[] answers = {10.5, 21, 11.6};
    double[] sluice = {14.5, 29, 15.4};
    for (int r = 0; r < 3; r++) {
      window(cpu, "noop", noop[r], 1000);
      window(cpu, "noop-answers", answers[r], 980);
      window(cpu, "sluice", sluice[r], 800);
    }
    // answers − noop: 0.5, 1, 0.6 → 0.6; sluice − answers: 4, 8, 3.8 → 4
    assertThat(print(cpu))
        .contains(
            "its answers on the transport (noop-answers − noop) 0.60 [0.50–1.00]; its own logic"
                + " (sluice − noop-answers) 4.00 [3.80–8.00]; rate noop-answers ÷ noop 0.980"
                + " [0.98–0.98], sluice ÷ noop-answers 0.816 [0.82–0.82]");
  }

  @Test
  void eventLoops_areGrpcsWorkerThreads_byTheirKernelName() {
    assertThat(FloorCpu.isEventLoop("grpc-default-wo")).isTrue();
    assertThat(FloorCpu.isEventLoop("grpc-nio-worker")).isTrue();
    assertThat(FloorCpu.isEventLoop("C2 CompilerThre")).isFalse();
    assertThat(FloorCpu.isEventLoop("sluice-housekee")).isFalse();
  }

  @Test
  void readingsOfThisJvm_areNoneInProcessAndPositiveFromProcfs() {
    assertThat(FloorCpu.Reading.of(-1)).isEqualTo(FloorCpu.Reading.NONE);
    long self = ProcessHandle.current().pid();
    FloorCpu.Reading r = FloorCpu.Reading.of(self);
    if (java.nio.file.Files.exists(java.nio.file.Path.of("/proc/self/stat"))) {
      assertThat(r.processNanos()).isPositive();
    }
  }

  /** One measured window: {@code micros} of CPU per call on both readings, 1,000 calls. */
  private static void window(FloorCpu cpu, String target, double micros, double rate) {
    long nanos = Math.round(micros * 1000 * 1000);
    cpu.add("llm", target, FloorCpu.Reading.NONE, new FloorCpu.Reading(nanos, nanos), 1000, rate);
  }

  private static String print(FloorCpu cpu) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    cpu.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), "llm");
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
