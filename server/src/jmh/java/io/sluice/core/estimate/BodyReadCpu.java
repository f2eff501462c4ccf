package io.sluice.core.estimate;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

/**
 * The CPU time and the bytes allocated of {@link FloorPartsBenchmark#requestEstimate} (the floor's
 * 1.9 KB chat body estimated, format known, byte heuristic) on this thread, in a plain loop (no JMH
 * harness): on a loaded machine the thread's CPU time of a microsecond read holds where JMH's wall
 * time does not. The same source compiled against two jars compares them, run alternately.
 *
 * <pre>
 * javac -proc:none -d /tmp/body-new -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/core/estimate/BodyReadCpu.java
 * java -cp /tmp/body-new:server/target/benchmarks.jar io.sluice.core.estimate.BodyReadCpu
 * </pre>
 *
 * Prints the CPU nanoseconds and bytes per estimate of five rounds of 200,000 after 1,000,000.
 */
public final class BodyReadCpu {
  private BodyReadCpu() {}

  public static void main(String[] args) {
    FloorPartsBenchmark b = new FloorPartsBenchmark();
    b.setUp();
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sink = 0;
    for (int i = 0; i < 1_000_000; i++) {
      sink += b.requestEstimate().inputTokens();
    }
    long[] cpu = new long[5];
    long[] bytes = new long[5];
    for (int k = 0; k < 5; k++) {
      long before = mx.getCurrentThreadCpuTime();
      long allocated = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < 200_000; i++) {
        sink += b.requestEstimate().inputTokens();
      }
      cpu[k] = (mx.getCurrentThreadCpuTime() - before) / 200_000;
      bytes[k] = (mx.getCurrentThreadAllocatedBytes() - allocated) / 200_000;
    }
    System.out.println("requestEstimate cpu ns/op (5 x 200k): " + Arrays.toString(cpu));
    System.out.println("requestEstimate allocated B/op (5 x 200k): " + Arrays.toString(bytes));
    System.out.println(sink == 42 ? "(sink)" : "");
  }
}
