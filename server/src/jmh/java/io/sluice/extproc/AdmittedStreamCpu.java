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
 * java -cp server/target/benchmarks.jar io.sluice.extproc.AdmittedStreamCpu [llm]
 * </pre>
 *
 * Prints the CPU nanoseconds and the bytes allocated (by this thread, which runs the handler) per
 * stream of five rounds of 100,000 after 300,000 to warm up; with {@code llm}, of {@link
 * ExtProcStreamBenchmark#envoyStream} (the LLM-shaped stream) instead.
 */
public final class AdmittedStreamCpu {
  private AdmittedStreamCpu() {}

  public static void main(String[] args) throws Exception {
    ExtProcStreamBenchmark b = new ExtProcStreamBenchmark();
    b.setUp();
    Blackhole bh = blackhole();
    boolean llm = args.length > 0 && args[0].equals("llm");
    try {
      for (int i = 0; i < 300_000; i++) {
        run(b, bh, llm);
      }
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      com.sun.management.ThreadMXBean bytes = (com.sun.management.ThreadMXBean) mx;
      StringBuilder out = new StringBuilder("cpu ns/op (5 x 100k):");
      StringBuilder allocated = new StringBuilder("allocated B/op (5 x 100k):");
      for (int k = 0; k < 5; k++) {
        long before = mx.getCurrentThreadCpuTime();
        long bytesBefore = bytes.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++) {
          run(b, bh, llm);
        }
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 100_000);
        allocated
            .append(' ')
            .append((bytes.getCurrentThreadAllocatedBytes() - bytesBefore) / 100_000);
      }
      System.out.println(out);
      System.out.println(allocated); // this thread's: the handler runs on it (direct executor)
    } finally {
      b.tearDown();
    }
    System.exit(0);
  }

  /** A blackhole outside JMH's harness (this loop's, and {@link AdmittedStreamAlloc}'s). */
  static Blackhole blackhole() {
    return new Blackhole(
        "Today's password is swordfish. I understand instantiating Blackholes directly is"
            + " dangerous.");
  }

  /** One admitted stream, or with {@code llm} one LLM-shaped stream. */
  static void run(ExtProcStreamBenchmark b, Blackhole bh, boolean llm) throws Exception {
    if (llm) {
      b.envoyStream(bh);
    } else {
      b.admittedStream(bh);
    }
  }
}
