package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The floor's method (see "The floor's method: the twin" in docs/benchmarks.md): the order of a
 * round's windows gives every target the same place against the no-op over a pair of rounds; the
 * idle servers are stopped while another is measured; each target has client event loops of its
 * own; the other servers' CPU during each target's windows is printed.
 */
class FloorMethodTest {
  static final List<String> TARGETS =
      List.of("noop", "sluice", "sluice-reject", "sluice-telemetry", "sluice-twin", "noop-answers");

  @Test
  void mirrored_everyTargetsPlaceAgainstTheNoOp_cancelsOverEachPairOfRounds() {
    for (int pair = 0; pair < 4; pair++) {
      List<String> first = FloorOrder.MIRRORED.round(TARGETS, 2 * pair);
      List<String> second = FloorOrder.MIRRORED.round(TARGETS, 2 * pair + 1);
      assertThat(first).containsExactlyInAnyOrderElementsOf(TARGETS);
      assertThat(second).containsExactlyInAnyOrderElementsOf(TARGETS);
      for (String t : TARGETS) {
        int d1 = first.indexOf(t) - first.indexOf("noop");
        int d2 = second.indexOf(t) - second.indexOf("noop");
        assertThat(d1 + d2).as("%s in pair %d", t, pair).isZero();
        if (!t.equals(first.get(0))) {
          assertThat(predecessor(second, t)).as(t).isNotEqualTo(predecessor(first, t));
        }
      }
    }
  }

  @Test
  void rotated_isTheOldOrder_oneTargetAlwaysFarBeforeTheNoOp() {
    List<Integer> twinBeforeNoop = new ArrayList<>();
    for (int round = 0; round < 8; round++) {
      List<String> r = FloorOrder.ROTATED.round(TARGETS, round);
      for (int i = 0; i < TARGETS.size(); i++) {
        assertThat(r.get(i)).isEqualTo(TARGETS.get((i + round) % TARGETS.size()));
      }
      if (r.indexOf("sluice-twin") < r.indexOf("noop")) {
        twinBeforeNoop.add(round);
      }
    }
    // the bias the mirrored order removes: the target listed fifth precedes the no-op of its round
    // in 5 rounds of 8, target sluice (listed second) in 2
    assertThat(twinBeforeNoop).containsExactly(1, 2, 3, 4, 7);
    assertThat(FloorOrder.parse("rotated")).isEqualTo(FloorOrder.ROTATED);
    assertThat(FloorOrder.parse("mirrored")).isEqualTo(FloorOrder.MIRRORED);
  }

  @Test
  void runOnly_stopsEveryOtherChild_andResumeAllLetsThemRun() throws Exception {
    if (!Files.exists(Path.of("/proc/self/stat"))) {
      return; // procfs: Linux only
    }
    Map<String, Process> children = new LinkedHashMap<>();
    for (String t : List.of("noop", "sluice", "sluice-twin")) {
      children.put(t, new ProcessBuilder("sleep", "60").start());
    }
    try (FloorTargets servers = FloorTargets.ofChildren(children)) {
      servers.runOnly("sluice");
      assertThat(state(children.get("sluice"))).isNotEqualTo('T');
      assertThat(state(children.get("noop"))).isEqualTo('T');
      assertThat(state(children.get("sluice-twin"))).isEqualTo('T');
      servers.runOnly("sluice-twin");
      assertThat(state(children.get("sluice"))).isEqualTo('T');
      assertThat(state(children.get("sluice-twin"))).isNotEqualTo('T');
      servers.resumeAll();
      for (Process p : children.values()) {
        assertThat(state(p)).isNotEqualTo('T');
      }
      servers.runOnly("noop"); // closing ends stopped children too
    }
    for (Process p : children.values()) {
      assertThat(p.isAlive()).isFalse();
    }
  }

  @Test
  void channels_eachTargetHasLoopsOfItsOwn_orAllShareOne() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    ports.put("noop", 1);
    ports.put("sluice", 2);
    ports.put("sluice-twin", 3);
    try (FloorChannels own = new FloorChannels(ports, 4, false);
        FloorChannels shared = new FloorChannels(ports, 4, true)) {
      assertThat(own.loopGroups()).isEqualTo(3);
      assertThat(shared.loopGroups()).isEqualTo(1);
      assertThat(own.of("sluice-twin")).hasSize(4);
    }
  }

  @Test
  void otherServersCpu_isPrintedPerTarget_medianOverRounds() {
    FloorCpu cpu = new FloorCpu();
    for (int r = 0; r < 3; r++) {
      cpu.add("llm", "noop", FloorCpu.Reading.NONE, FloorCpu.Reading.NONE, 1000, 1000);
      cpu.others("llm", "noop", 0.01 * r);
      cpu.others("llm", "sluice-twin", 0.3 + 0.1 * r);
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    cpu.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), "llm");
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .contains(
            "llm: the other servers' CPU during each target's measured windows (cores; median"
                + " [min–max]): noop 0.010 [0.00–0.02], sluice-twin 0.400 [0.30–0.50]");
  }

  @Test
  void rateAgainstSluice_isPairedByRound_forEveryOtherTarget() {
    FloorCpu cpu = new FloorCpu();
    double[] noop = {1000, 500, 1100};
    double[] sluice = {850, 420, 940};
    double[] twin = {860, 400, 940};
    for (int r = 0; r < 3; r++) {
      cpu.add("llm", "noop", FloorCpu.Reading.NONE, FloorCpu.Reading.NONE, 1000, noop[r]);
      cpu.add("llm", "sluice", FloorCpu.Reading.NONE, FloorCpu.Reading.NONE, 1000, sluice[r]);
      cpu.add("llm", "sluice-twin", FloorCpu.Reading.NONE, FloorCpu.Reading.NONE, 1000, twin[r]);
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    cpu.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), "llm");
    // 860/850, 400/420, 940/940 → 1.012, 0.952, 1.000
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .contains(
            "llm: rate ÷ `sluice`'s, paired by round (median [min–max]; a twin reads 1 when the"
                + " method is sound): sluice-twin 1.000 [0.95–1.01]");
  }

  private static String predecessor(List<String> round, String t) {
    int i = round.indexOf(t);
    return i == 0 ? "" : round.get(i - 1);
  }

  /** The process's state letter from procfs ({@code T}: stopped). */
  private static char state(Process p) throws IOException, InterruptedException {
    for (int i = 0; i < 50; i++) { // the signal lands at once; procfs may show it a moment later
      String stat = Files.readString(Path.of("/proc/" + p.pid() + "/stat"));
      char s = stat.charAt(stat.lastIndexOf(')') + 2);
      if (s == 'T' || i == 49) {
        return s;
      }
      Thread.sleep(10);
    }
    return '?';
  }
}
