package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The CPU time of {@link ExtProcStreamBenchmark#admittedStream} on its own thread, in a plain loop
 * (no JMH harness): a measure that a busy machine disturbs less than wall time, for comparing two
 * jars run alternately (docs/benchmarks.md, "Seams: cost of the new shape").
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.AdmittedStreamCpu
 * </pre>
 *
 * Prints the CPU nanoseconds per stream of five rounds of 100,000 after 300,000 to warm up.
 */
public final class AdmittedStreamCpu {
  private AdmittedStreamCpu() {}

  public static void main(String[] args) throws Exception {
    ExtProcStreamBenchmark b = new ExtProcStreamBenchmark();
    b.setUp();
    Blackhole bh =
        new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is"
                + " dangerous.");
    try {
      for (int i = 0; i < 300_000; i++) {
        b.admittedStream(bh);
      }
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      StringBuilder out = new StringBuilder("cpu ns/op (5 x 100k):");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < 100_000; i++) {
          b.admittedStream(bh);
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 100_000);
      }
      System.out.println(out);
    } finally {
      b.tearDown();
    }
    System.exit(0);
  }
}
