package io.sluice.core.estimate;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The thread CPU time of each {@link LearningPartsBenchmark} method in a plain loop (no JMH
 * harness, so the same source compiles against the parent commit's benchmarks jar too): a figure a
 * busy machine disturbs less than wall time, for two jars run alternately.
 *
 * <pre>
 * javac -d /tmp/cpu -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/core/estimate/LearningPartsCpu.java \
 *   server/src/jmh/java/io/sluice/core/estimate/LearningPartsBenchmark.java
 * java -cp /tmp/cpu:server/target/benchmarks.jar io.sluice.core.estimate.LearningPartsCpu
 * </pre>
 *
 * Prints, per part, the CPU nanoseconds per operation of five rounds of 1,000,000 after 2,000,000.
 */
public final class LearningPartsCpu {
  private LearningPartsCpu() {}

  public static void main(String[] args) {
    LearningPartsBenchmark b = new LearningPartsBenchmark();
    b.setUp();
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    String[] parts = {
      "reserveAndLearn", "serviceSample", "encodingLookup", "reserveAndLearnFreshTenant"
    };
    long sink = 0;
    for (int p = 0; p < parts.length; p++) {
      for (int i = 0; i < 2_000_000; i++) {
        sink += run(b, p);
      }
      StringBuilder out = new StringBuilder(parts[p]).append(" cpu ns/op (5 x 1M):");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < 1_000_000; i++) {
          sink += run(b, p);
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
      }
      System.out.println(out);
    }
    System.out.println("(" + sink + ")");
  }

  private static long run(LearningPartsBenchmark b, int part) {
    return switch (part) {
      case 0 -> b.reserveAndLearn();
      case 1 -> (long) b.serviceSample();
      case 2 -> b.encodingLookup() == null ? 0 : 1;
      default -> b.reserveAndLearnFreshTenant();
    };
  }
}
