package io.sluice.core.estimate;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * The CPU time of {@link UsageScanBenchmark}'s methods on this thread, alternating in one JVM (no
 * JMH harness): on a loaded machine JMH's wall time of a sub-microsecond read is noise, the
 * thread's CPU time much less so; compare the methods within one run.
 *
 * <pre>
 * javac -d /tmp/cpu -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/core/estimate/UsageReadCpu.java
 * java -cp /tmp/cpu:server/target/benchmarks.jar io.sluice.core.estimate.UsageReadCpu
 * </pre>
 *
 * Prints each method's CPU nanoseconds per operation of five rounds of 100,000 after 300,000.
 */
public final class UsageReadCpu {
  private UsageReadCpu() {}

  private interface Op {
    Object run() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    UsageScanBenchmark b = new UsageScanBenchmark();
    b.setUp();
    String[] names = {"usageRead", "usageReadParser", "scan", "parserTokens", "extractorAlone"};
    Op[] ops = {b::usageRead, b::usageReadParser, b::scan, b::parserTokens, b::extractorAlone};
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    for (Op op : ops) {
      for (int i = 0; i < 300_000; i++) {
        sink += op.run().hashCode();
      }
    }
    long[][] cpu = new long[ops.length][5];
    for (int k = 0; k < 5; k++) {
      for (int j = 0; j < ops.length; j++) {
        long before = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < 100_000; i++) {
          sink += ops[j].run().hashCode();
        }
        cpu[j][k] = (mx.getCurrentThreadCpuTime() - before) / 100_000;
      }
    }
    for (int j = 0; j < ops.length; j++) {
      System.out.println(names[j] + " cpu ns/op (5 x 100k): " + Arrays.toString(cpu[j]));
    }
    System.out.println(sink == 42 ? "(sink)" : "");
  }
}
