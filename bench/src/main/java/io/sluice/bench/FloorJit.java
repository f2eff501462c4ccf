package io.sluice.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The floor's JIT: a warm-up that ends when every server's JIT has settled, and each measured
 * window's compiler CPU per call. A server's compiler threads ({@code C1 CompilerThre}, {@code C2
 * CompilerThre}: HotSpot's compiler threads by their kernel name) are read from procfs ({@code
 * /proc/PID/task/TID/schedstat}, ns), its whole process as {@link FloorCpu#processNanos} reads it.
 * Warm cycles (each visits every workload and target once) go on until, in the last cycle, every
 * server's compiler CPU is below {@code --jit-settle-share} of its CPU, with {@code --warmup} as
 * the least and {@code --warmup-max} as the most; past the most the floor names the servers that
 * had not settled. With {@code --separate} each server is its own child JVM; in one JVM the rule
 * reads that JVM (the generator's compilations included, so it settles no earlier than the
 * servers). Linux only; where procfs is unreadable every share reads 0 and the warm-up lasts {@code
 * --warmup}.
 */
final class FloorJit {
  /** Where the warm-up stands after a cycle. */
  enum State {
    SETTLED,
    NOT_YET,
    GAVE_UP
  }

  /** One server's CPU over its last warm cycle: its compiler threads' and its process's, in ns. */
  record Cycle(long compilerNanos, long processNanos) {
    /** The compiler's share of the server's CPU; 0 when the server used none (or is unreadable). */
    double share() {
      return processNanos <= 0 ? 0 : (double) compilerNanos / processNanos;
    }
  }

  /** The decision after a warm cycle, and the servers whose JIT had not settled in it. */
  record Decision(State state, List<String> unsettled) {}

  /**
   * The settle rule: {@link State#SETTLED} once {@code minSeconds} have passed and every server's
   * compiler share in {@code last} (its last warm cycle; empty before the first) is below {@code
   * maxShare}; {@link State#GAVE_UP} once {@code maxSeconds} have passed without that; {@link
   * State#NOT_YET} otherwise. A {@code maxShare} of 0 or less turns the rule off: the warm-up then
   * lasts {@code minSeconds}, as it did before the rule.
   */
  static Decision decide(
      Map<String, Cycle> last,
      double maxShare,
      double elapsedSeconds,
      double minSeconds,
      double maxSeconds) {
    boolean off = maxShare <= 0;
    List<String> unsettled =
        off
            ? List.of()
            : last.entrySet().stream()
                .filter(e -> e.getValue().share() >= maxShare)
                .map(Map.Entry::getKey)
                .toList();
    boolean judged = off || !last.isEmpty();
    if (elapsedSeconds >= minSeconds && judged && unsettled.isEmpty()) {
      return new Decision(State.SETTLED, unsettled);
    }
    if (elapsedSeconds >= Math.max(minSeconds, maxSeconds) && !off) {
      return new Decision(State.GAVE_UP, judged ? unsettled : List.copyOf(last.keySet()));
    }
    return new Decision(State.NOT_YET, unsettled);
  }

  /** Target → the pid whose JIT is read (its child JVM, or this JVM when it runs here). */
  private final Map<String, Long> pids = new LinkedHashMap<>();

  /** Target → its compiler threads' CPU by thread id, and its process CPU, at the cycle's start. */
  private final Map<String, Map<String, Long>> cycleCompilers = new HashMap<>();

  private final Map<String, Long> cycleProcess = new HashMap<>();

  private final Map<String, Cycle> last = new LinkedHashMap<>();

  /** Workload → target → the compiler's µs per call in each measured window. */
  private final Map<String, Map<String, List<Double>>> windows = new LinkedHashMap<>();

  private final boolean oneJvm;

  private String verdict = "";

  FloorJit(FloorTargets servers, List<String> targets) {
    long self = ProcessHandle.current().pid();
    targets.forEach(t -> pids.put(t, servers.pid(t) < 0 ? self : servers.pid(t)));
    oneJvm = !servers.separate();
  }

  /** Marks a warm cycle's start: every server's compiler and process CPU so far. */
  void begin() {
    pids.forEach(
        (t, pid) -> {
          cycleCompilers.put(t, compilers(pid));
          cycleProcess.put(t, FloorCpu.processNanos(pid));
        });
  }

  /**
   * Ends a warm cycle ({@code elapsedSeconds} into the warm-up), prints each server's compiler
   * share in it, and tells whether the warm-up is over.
   */
  boolean settled(PrintStream out, double elapsedSeconds, int minSeconds, FloorMethodOptions m) {
    if (cycleProcess.isEmpty()) { // no cycle yet
      return decide(last, m.jitSettleShare, elapsedSeconds, minSeconds, m.warmupMaxSeconds).state()
          != State.NOT_YET;
    }
    pids.forEach(
        (t, pid) ->
            last.put(
                oneJvm ? "this JVM" : t,
                new Cycle(
                    grown(cycleCompilers.getOrDefault(t, Map.of()), compilers(pid)),
                    FloorCpu.processNanos(pid) - cycleProcess.getOrDefault(t, 0L))));
    Decision d = decide(last, m.jitSettleShare, elapsedSeconds, minSeconds, m.warmupMaxSeconds);
    out.printf(
        Locale.ROOT,
        "warm cycle to %.0f s: JIT compiler share of CPU %s (settled below %.1f %%): %s%n",
        elapsedSeconds,
        String.join(
            ", ",
            last.entrySet().stream()
                .map(
                    e ->
                        String.format(
                            Locale.ROOT, "%s %.1f %%", e.getKey(), 100 * e.getValue().share()))
                .toList()),
        100 * m.jitSettleShare,
        d.state());
    if (d.state() == State.GAVE_UP) {
      verdict =
          String.format(
              Locale.ROOT,
              "%nWARNING: the JIT had NOT settled after %.0f s of warm-up (--warmup-max %d) in: %s"
                  + " (compiler share of CPU in the last warm cycle at or above %.1f %%); their"
                  + " figures are measured in code still compiling%n",
              elapsedSeconds,
              m.warmupMaxSeconds,
              String.join(", ", d.unsettled()),
              100 * m.jitSettleShare);
      out.print(verdict);
    }
    return d.state() != State.NOT_YET;
  }

  /** The compiler threads' CPU so far of the process reading {@code target}'s JIT, in ns. */
  long compilerNanos(String target) {
    Long pid = pids.get(target);
    return pid == null ? 0 : compilers(pid).values().stream().mapToLong(Long::longValue).sum();
  }

  /** Adds one measured window: its compiler CPU (ns) and calls. */
  void window(String workload, String target, long compilerNanos, long calls) {
    windows
        .computeIfAbsent(workload, k -> new LinkedHashMap<>())
        .computeIfAbsent(target, k -> new ArrayList<>())
        .add(compilerNanos / 1e3 / Math.max(1, calls));
  }

  /** Prints one workload's compiler CPU per call in the measured windows, by target. */
  void print(PrintStream out, String workload) {
    Map<String, List<Double>> byTarget = windows.get(workload);
    if (byTarget == null) {
      return;
    }
    out.printf(
        Locale.ROOT,
        "%n%s: JIT compiler CPU per call in the measured windows (µs; median [min–max] over"
            + " rounds; near 0 in settled code%s): %s%n",
        workload,
        oneJvm ? "; this JVM's compiler threads, the generator's included" : "",
        String.join(
            ", ",
            byTarget.entrySet().stream()
                .map(e -> e.getKey() + " " + FloorCpu.spread(e.getValue()))
                .toList()));
  }

  /** The warning when the warm-up gave up on some server, or empty. */
  String verdict() {
    return verdict;
  }

  /** The CPU the threads in {@code after} gained since {@code before} (new threads: all of it). */
  static long grown(Map<String, Long> before, Map<String, Long> after) {
    long sum = 0;
    for (Map.Entry<String, Long> e : after.entrySet()) {
      sum += Math.max(0, e.getValue() - before.getOrDefault(e.getKey(), 0L));
    }
    return sum;
  }

  /**
   * The process's compiler threads' time on CPU so far, by thread id, in ns; empty if unreadable.
   */
  static Map<String, Long> compilers(long pid) {
    return FloorCpu.threadNanos(pid, FloorJit::isCompiler);
  }

  /** Whether a thread's kernel name (at most 15 characters) is one of HotSpot's JIT compilers. */
  static boolean isCompiler(String comm) {
    return comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre");
  }
}
