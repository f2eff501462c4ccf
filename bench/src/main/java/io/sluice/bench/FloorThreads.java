package io.sluice.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A separate server's CPU by thread group ({@code floor --separate --threads}): the user and system
 * time of each of its threads (procfs {@code /proc/PID/task/TID/stat}) over the measured windows of
 * one target, grouped by thread name with the numbers taken out ({@code GC Thread#0} and {@code GC
 * Thread#1} are {@code GC Thread#}), then per call. The server's event loops, its GC, its JIT and
 * its own housekeeping threads show apart, and system time (the socket's syscalls) apart from user
 * time. Linux only; elsewhere nothing is counted.
 */
final class FloorThreads {
  /** Group name → {user ns, system ns} summed over the windows, scaled to the measured part. */
  private final Map<String, double[]> cpu = new TreeMap<>();

  private long calls;

  /** The threads' CPU so far: group name → {user ns, system ns}; empty when unreadable. */
  static Map<String, long[]> snapshot(long pid) {
    Map<String, long[]> out = new LinkedHashMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      tasks.forEach(
          t -> {
            try {
              String stat = Files.readString(t.resolve("stat"));
              int open = stat.indexOf('(');
              int close = stat.lastIndexOf(')');
              String name = group(stat.substring(open + 1, close));
              String[] f = stat.substring(close + 2).split(" ");
              long[] sum = out.computeIfAbsent(name, k -> new long[2]);
              sum[0] += Long.parseLong(f[11]) * NANOS_PER_TICK; // utime
              sum[1] += Long.parseLong(f[12]) * NANOS_PER_TICK; // stime
            } catch (IOException | RuntimeException gone) {
              // the thread ended meanwhile
            }
          });
    } catch (IOException | RuntimeException e) {
      return Map.of();
    }
    return out;
  }

  /** A thread name without its numbers: one group per pool. */
  static String group(String name) {
    return name.replaceAll("[0-9]+", "").replaceAll("[-#_ ]+$", "");
  }

  /**
   * Adds one window: the snapshots before and after it, the share of it that was measured (the
   * settle second is not) and the calls it measured.
   */
  void add(Map<String, long[]> before, Map<String, long[]> after, double measured, long done) {
    after.forEach(
        (name, a) -> {
          long[] b = before.getOrDefault(name, new long[2]);
          double[] sum = cpu.computeIfAbsent(name, k -> new double[2]);
          sum[0] += (a[0] - b[0]) * measured;
          sum[1] += (a[1] - b[1]) * measured;
        });
    calls += done;
  }

  /** Prints µs per call by thread group, user and system, largest first. */
  void print(PrintStream out, String label) {
    if (calls == 0 || cpu.isEmpty()) {
      return;
    }
    out.printf(Locale.ROOT, "%n%s: server CPU per call by thread group (µs)%n", label);
    out.println("| thread group | user | system | total |");
    out.println("|---|---|---|---|");
    double[] total = new double[2];
    cpu.entrySet().stream()
        .sorted((x, y) -> Double.compare(sum(y.getValue()), sum(x.getValue())))
        .filter(e -> sum(e.getValue()) > 0)
        .forEach(
            e -> {
              double[] v = e.getValue();
              total[0] += v[0];
              total[1] += v[1];
              out.printf(
                  Locale.ROOT,
                  "| %s | %.2f | %.2f | %.2f |%n",
                  e.getKey(),
                  v[0] / 1e3 / calls,
                  v[1] / 1e3 / calls,
                  sum(v) / 1e3 / calls);
            });
    out.printf(
        Locale.ROOT,
        "| all | %.2f | %.2f | %.2f |%n",
        total[0] / 1e3 / calls,
        total[1] / 1e3 / calls,
        sum(total) / 1e3 / calls);
  }

  private static double sum(double[] v) {
    return v[0] + v[1];
  }

  /** Linux's USER_HZ: procfs counts CPU time in these ticks. */
  private static final long NANOS_PER_TICK = 1_000_000_000L / 100;
}
