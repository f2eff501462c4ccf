package io.sluice.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * The floor's CPU method ({@code floor --separate}): each server's CPU per call in every measured
 * window, read from procfs of its own child JVM at the window's first and last instant (not the
 * generator's, and not a wall-clock rate), then compared <em>round by round</em>: a target's CPU
 * above the no-op's in the same round, and against {@code sluice}'s in the same round. The medians
 * of those paired figures over the rounds move far less than the rates do on a shared machine.
 *
 * <p>Two readings per server: the whole process ({@code /proc/PID/stat}, user + system, 10 ms
 * ticks) and its gRPC event-loop threads alone ({@code /proc/PID/task/TID/schedstat}, ns: where
 * every request runs), which leaves out the JIT, GC and timer threads whose CPU comes in bursts.
 * The target {@code sluice-twin} (a second child JVM of the same jar, {@code --targets}) is the
 * control: its paired difference to {@code sluice} is what the method reads for two identical
 * builds, i.e. its spread. With the target {@code noop-answers} (the no-op sending Sluice's own
 * answers) Sluice's extra is split into what its answers cost the transport and what its own logic
 * costs.
 */
final class FloorCpu {
  /** One server's CPU so far: the whole process, and its event-loop threads, in ns. */
  record Reading(long processNanos, long loopNanos) {
    static final Reading NONE = new Reading(0, 0);

    /** The server's CPU now; {@link #NONE} when it runs in this JVM or procfs is unreadable. */
    static Reading of(long pid) {
      if (pid < 0) {
        return NONE;
      }
      return new Reading(FloorCpu.processNanos(pid), FloorCpu.loopNanos(pid));
    }
  }

  /** One target's measured windows of one workload: µs per call, by round. */
  private static final class Rounds {
    final List<Double> process = new ArrayList<>();
    final List<Double> loops = new ArrayList<>();
    final List<Double> rate = new ArrayList<>();
  }

  private final Map<String, Map<String, Rounds>> byWorkload = new LinkedHashMap<>();

  /** Workload → target → the other servers' CPU during its measured windows, cores, by round. */
  private final Map<String, Map<String, List<Double>>> others = new LinkedHashMap<>();

  /**
   * Adds one measured window's reading of the servers <em>not</em> measured in it: their CPU over
   * the window, in cores (what they took from the cores the measured server and the generator
   * share).
   */
  void others(String workload, String target, double cores) {
    others
        .computeIfAbsent(workload, k -> new LinkedHashMap<>())
        .computeIfAbsent(target, k -> new ArrayList<>())
        .add(cores);
  }

  /** Adds one measured window: the readings at its first and last instant, its calls and rate. */
  void add(String workload, String target, Reading before, Reading after, long calls, double rate) {
    Rounds r =
        byWorkload
            .computeIfAbsent(workload, k -> new LinkedHashMap<>())
            .computeIfAbsent(target, k -> new Rounds());
    double n = Math.max(1, calls);
    r.process.add((after.processNanos() - before.processNanos()) / 1e3 / n);
    r.loops.add((after.loopNanos() - before.loopNanos()) / 1e3 / n);
    r.rate.add(rate);
  }

  /**
   * Prints one workload's table: each target's CPU per call (median and range over rounds), what it
   * spends above the no-op and against {@code sluice}, both paired by round, and its rate ratio.
   */
  void print(PrintStream out, String workload) {
    Map<String, Rounds> targets = byWorkload.get(workload);
    if (targets == null || !targets.containsKey("noop")) {
      return;
    }
    Rounds noop = targets.get("noop");
    Rounds sluice = targets.get("sluice");
    out.printf(
        Locale.ROOT,
        "%n%s: server CPU per call, paired by round (µs; median [min–max] of %d rounds)%n",
        workload,
        noop.loops.size());
    out.println(
        "| target | process | event loops | event loops above the no-op | event loops minus"
            + " `sluice` | process minus `sluice` | rate ÷ no-op |");
    out.println("|---|---|---|---|---|---|---|");
    targets.forEach(
        (name, r) ->
            out.printf(
                Locale.ROOT,
                "| %s | %s | %s | %s | %s | %s | %s |%n",
                name,
                spread(r.process),
                spread(r.loops),
                name.equals("noop") ? "-" : spread(paired(r.loops, noop.loops, false)),
                sluice == null || name.equals("sluice") || name.equals("noop")
                    ? "-"
                    : spread(paired(r.loops, sluice.loops, false)),
                sluice == null || name.equals("sluice") || name.equals("noop")
                    ? "-"
                    : spread(paired(r.process, sluice.process, false)),
                name.equals("noop") ? "1" : spread3(paired(r.rate, noop.rate, true))));
    Map<String, List<Double>> idle = others.get(workload);
    if (idle != null) {
      out.printf(
          Locale.ROOT,
          "%n%s: the other servers' CPU during each target's measured windows (cores; median"
              + " [min–max]): %s%n",
          workload,
          String.join(
              ", ",
              idle.entrySet().stream()
                  .map(e -> e.getKey() + " " + spread3(e.getValue()))
                  .toList()));
    }
    if (sluice != null && targets.size() > 2) {
      out.printf(
          Locale.ROOT,
          "%n%s: rate ÷ `sluice`'s, paired by round (median [min–max]; a twin reads 1 when the"
              + " method is sound): %s%n",
          workload,
          String.join(
              ", ",
              targets.entrySet().stream()
                  .filter(e -> !e.getKey().equals("sluice") && !e.getKey().equals("noop"))
                  .map(
                      e -> e.getKey() + " " + spread3(paired(e.getValue().rate, sluice.rate, true)))
                  .toList()));
    }
    Rounds answers = targets.get("noop-answers");
    if (sluice != null && answers != null) {
      out.printf(
          Locale.ROOT,
          "%n%s: Sluice's extra event-loop CPU per call, split (µs, paired by round): its answers"
              + " on the transport (noop-answers − noop) %s; its own logic (sluice −"
              + " noop-answers) %s; rate noop-answers ÷ noop %s, sluice ÷ noop-answers %s%n",
          workload,
          spread(paired(answers.loops, noop.loops, false)),
          spread(paired(sluice.loops, answers.loops, false)),
          spread3(paired(answers.rate, noop.rate, true)),
          spread3(paired(sluice.rate, answers.rate, true)));
    }
  }

  /** {@code a[i] - b[i]} (or {@code a[i] / b[i]}) round by round. */
  static List<Double> paired(List<Double> a, List<Double> b, boolean ratio) {
    List<Double> out = new ArrayList<>();
    for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
      out.add(ratio ? a.get(i) / b.get(i) : a.get(i) - b.get(i));
    }
    return out;
  }

  static String spread(List<Double> v) {
    return format(v, "%.2f [%.2f–%.2f]");
  }

  private static String spread3(List<Double> v) {
    return format(v, "%.3f [%.2f–%.2f]");
  }

  private static String format(List<Double> v, String pattern) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
    if (a.length == 0) {
      return "-";
    }
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (double x : a) {
      min = Math.min(min, x);
      max = Math.max(max, x);
    }
    return String.format(Locale.ROOT, pattern, FloorReport.median(a), min, max);
  }

  /** User + system CPU of the whole process ({@code /proc/PID/stat}), in ns; 0 if unreadable. */
  static long processNanos(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * NANOS_PER_TICK;
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /**
   * Time on CPU of the process's gRPC event-loop threads ({@code grpc-default-worker-*}, whose name
   * the kernel keeps as {@code grpc-default-wo}), from each thread's {@code schedstat}, in ns.
   */
  static long loopNanos(long pid) {
    return threadNanos(pid, FloorCpu::isEventLoop).values().stream()
        .mapToLong(Long::longValue)
        .sum();
  }

  /**
   * Time on CPU so far of the process's threads whose kernel name {@code comm} accepts, by thread
   * id, from each thread's {@code schedstat}, in ns; empty when procfs is unreadable.
   */
  static Map<String, Long> threadNanos(long pid, Predicate<String> comm) {
    Map<String, Long> out = new HashMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : (Iterable<Path>) tasks::iterator) {
        try {
          if (comm.test(Files.readString(t.resolve("comm")).strip())) {
            String s = Files.readString(t.resolve("schedstat"));
            out.put(t.getFileName().toString(), Long.parseLong(s.substring(0, s.indexOf(' '))));
          }
        } catch (IOException | RuntimeException gone) {
          // the thread ended meanwhile (event loops do not; HotSpot's compiler threads may)
        }
      }
    } catch (IOException | RuntimeException e) {
      return Map.of();
    }
    return out;
  }

  /** Whether a thread's kernel name (at most 15 characters) is one of gRPC's event loops. */
  static boolean isEventLoop(String comm) {
    return comm.startsWith("grpc-default-wo") || comm.startsWith("grpc-nio-worke");
  }

  /** Linux's USER_HZ: procfs counts CPU time in these ticks. */
  private static final long NANOS_PER_TICK = 1_000_000_000L / 100;
}
