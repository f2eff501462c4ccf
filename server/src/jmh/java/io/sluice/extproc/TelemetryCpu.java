package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The CPU time of {@link TelemetryOverheadBenchmark#envoyStream} (an LLM-shaped or headers-only
 * stream) on its own thread, in a plain loop (no JMH harness), for one {@code telemetry} setting: a
 * measure a busy machine disturbs less than wall time, for comparing settings and jars run
 * alternately (docs/benchmarks.md, "Telemetry").
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.TelemetryCpu on-1pct [warm-up] [round] [shape]
 * </pre>
 *
 * {@code shape}: {@code llm} (default) or {@code headers-only} ({@link
 * TelemetryOverheadBenchmark#shape}).
 *
 * <p>Prints the CPU nanoseconds per stream of five rounds (of 100,000 streams unless {@code round}
 * says) after a warm-up (300,000 unless {@code warm-up} says), their median, and the bytes the
 * thread allocated per stream over the five rounds (what JMH's {@code -prof gc} reports as B/op).
 */
public final class TelemetryCpu {
  private TelemetryCpu() {}

  public static void main(String[] args) throws Exception {
    TelemetryOverheadBenchmark b = new TelemetryOverheadBenchmark();
    b.telemetry = args.length > 0 ? args[0] : "off";
    b.shape = args.length > 3 ? args[3] : "llm";
    b.setUp();
    Blackhole bh =
        new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is"
                + " dangerous.");
    int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 300_000;
    int round = args.length > 2 ? Integer.parseInt(args[2]) : 100_000;
    try {
      for (int i = 0; i < warmup; i++) {
        b.envoyStream(bh);
      }
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      com.sun.management.ThreadMXBean alloc = (com.sun.management.ThreadMXBean) mx;
      long allocBefore = alloc.getCurrentThreadAllocatedBytes();
      long[] rounds = new long[5];
      StringBuilder out =
          new StringBuilder(b.telemetry)
              .append(' ')
              .append(b.shape)
              .append(" cpu ns/op (5 x ")
              .append(round)
              .append("):");
      for (int k = 0; k < rounds.length; k++) {
        long before = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < round; i++) {
          b.envoyStream(bh);
        }
        rounds[k] = (mx.getCurrentThreadCpuTime() - before) / round;
        out.append(' ').append(rounds[k]);
      }
      long bytes = (alloc.getCurrentThreadAllocatedBytes() - allocBefore) / (5L * round);
      java.util.Arrays.sort(rounds);
      System.out.println(
          out.append(" median ").append(rounds[rounds.length / 2]).append(" B/op ").append(bytes));
    } finally {
      b.tearDown();
    }
    System.exit(0);
  }
}
