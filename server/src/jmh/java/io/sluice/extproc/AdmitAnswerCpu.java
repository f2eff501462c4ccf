package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The CPU time of {@link AdmitAnswerBenchmark}'s two ways to write the common admit, on this
 * thread, in a plain loop (no JMH harness): a measure that a busy machine disturbs less than wall
 * time (docs/benchmarks/request-path-history.md, "Admit answer in one pass, before → after").
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.AdmitAnswerCpu
 * </pre>
 *
 * Prints, for {@code general}, {@code onePass} and {@code written} (twice each), the CPU
 * nanoseconds and the bytes allocated per answer of five rounds of 500,000 after 1,000,000 to warm
 * up.
 */
public final class AdmitAnswerCpu {
  private AdmitAnswerCpu() {}

  public static void main(String[] args) {
    AdmitAnswerBenchmark b = new AdmitAnswerBenchmark();
    Blackhole bh = AdmittedStreamCpu.blackhole();
    for (int i = 0; i < 1_000_000; i++) {
      bh.consume(b.general());
      bh.consume(b.onePass());
      bh.consume(b.written());
    }
    for (String way :
        new String[] {"general", "onePass", "written", "written", "onePass", "general"}) {
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      com.sun.management.ThreadMXBean bytes = (com.sun.management.ThreadMXBean) mx;
      StringBuilder out = new StringBuilder(way + " cpu ns/op (5 x 500k):");
      StringBuilder allocated = new StringBuilder(way + " allocated B/op:");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        long bytesBefore = bytes.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 500_000; i++) {
          bh.consume(
              switch (way) {
                case "onePass" -> b.onePass();
                case "written" -> b.written();
                default -> b.general();
              });
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 500_000);
        allocated
            .append(' ')
            .append((bytes.getCurrentThreadAllocatedBytes() - bytesBefore) / 500_000);
      }
      System.out.println(out);
      System.out.println(allocated);
    }
    System.exit(0);
  }
}
