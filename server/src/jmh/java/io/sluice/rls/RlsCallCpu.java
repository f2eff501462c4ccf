package io.sluice.rls;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The CPU time of {@link RateLimitServiceBenchmark#shouldRateLimit} on its own thread, in a plain
 * loop (no JMH harness): a measure that a busy machine disturbs less than wall time, for comparing
 * two jars run alternately (docs/benchmarks/request-path-history.md, "RLS path, before → after").
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.rls.RlsCallCpu
 * </pre>
 *
 * Prints the CPU nanoseconds and the bytes allocated (by this thread, which runs the whole call)
 * per call of five rounds of 200,000 after 400,000 to warm up.
 */
public final class RlsCallCpu {
  private RlsCallCpu() {}

  public static void main(String[] args) throws Exception {
    RateLimitServiceBenchmark b = new RateLimitServiceBenchmark();
    b.setUp();
    Blackhole bh =
        new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is"
                + " dangerous.");
    try {
      for (int i = 0; i < 400_000; i++) {
        b.shouldRateLimit(bh);
      }
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      com.sun.management.ThreadMXBean bytes = (com.sun.management.ThreadMXBean) mx;
      StringBuilder out = new StringBuilder("cpu ns/op (5 x 200k):");
      StringBuilder allocated = new StringBuilder("allocated B/op (5 x 200k):");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        long bytesBefore = bytes.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 200_000; i++) {
          b.shouldRateLimit(bh);
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 200_000);
        allocated
            .append(' ')
            .append((bytes.getCurrentThreadAllocatedBytes() - bytesBefore) / 200_000);
      }
      System.out.println(out);
      System.out.println(allocated);
    } finally {
      b.tearDown();
    }
    System.exit(0);
  }
}
