package io.sluice.observability;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The thread CPU time and bytes of each {@link ClassMetersBenchmark} method in a plain loop (no JMH
 * harness, so the same source compiles against the parent commit's benchmarks jar too): a figure a
 * busy machine disturbs less than wall time, for two jars run alternately.
 *
 * <pre>
 * javac -d /tmp/cpu -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/observability/ClassMeters{Cpu,Benchmark}.java
 * java -cp /tmp/cpu:server/target/benchmarks.jar io.sluice.observability.ClassMetersCpu
 * </pre>
 *
 * Prints, per method, the CPU nanoseconds and bytes allocated per operation of five rounds of
 * 1,000,000 after 2,000,000.
 */
public final class ClassMetersCpu {
  private ClassMetersCpu() {}

  public static void main(String[] args) {
    ClassMetersBenchmark b = new ClassMetersBenchmark();
    b.setUp();
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    com.sun.management.ThreadMXBean bytes = (com.sun.management.ThreadMXBean) mx;
    String[] parts = {"llmRequest", "oneShot"};
    long sink = 0;
    for (int p = 0; p < parts.length; p++) {
      for (int i = 0; i < 2_000_000; i++) {
        sink += run(b, p);
      }
      StringBuilder out = new StringBuilder(parts[p]).append(" cpu ns/op (5 x 1M):");
      StringBuilder allocated = new StringBuilder(" B/op:");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        long bytesBefore = bytes.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 1_000_000; i++) {
          sink += run(b, p);
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
        allocated
            .append(' ')
            .append((bytes.getCurrentThreadAllocatedBytes() - bytesBefore) / 1_000_000.0);
      }
      System.out.println(out.append(allocated));
    }
    System.out.println("(" + sink + ")");
  }

  private static int run(ClassMetersBenchmark b, int part) {
    return (part == 0 ? b.llmRequest() : b.oneShot()).hashCode() & 1;
  }
}
