package io.sluice.core.estimate;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;

/**
 * The thread CPU of the per-request parts around the model name and the response's type: the body's
 * model read from its bytes ({@link ModelEncodings#name}), its encoding looked up twice as an
 * estimate does ({@link ModelEncodings#forModel}: the scan's tally and the estimator), and the
 * usual response type's test ({@link SseFramer#isEventStream} of {@code application/json}, what
 * {@link UsageExtractor}'s constructor asks). A plain loop for comparing two jars run alternately:
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.core.estimate.ModelPartsCpu
 * </pre>
 *
 * Prints ten rounds of 10,000,000 after three to warm up, of each part.
 */
public final class ModelPartsCpu {
  private ModelPartsCpu() {}

  public static void main(String[] args) {
    ModelEncodings e = new ModelEncodings();
    byte[] body =
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":256}".getBytes(StandardCharsets.UTF_8);
    String[] json = {"application/json", new String("application/json")}; // not a constant
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    StringBuilder model = new StringBuilder("name + forModel x2, cpu ns/op (10 x 10M):");
    StringBuilder type =
        new StringBuilder("isEventStream(application/json), cpu ns/op (10 x 10M):");
    for (int r = 0; r < 13; r++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 10_000_000; i++) {
        String m = e.name(body, 10, 27);
        sink += e.forModel(m) == null ? 1 : 2;
        sink += e.forModel(m) == null ? 1 : 2;
      }
      long mid = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 10_000_000; i++) {
        sink += SseFramer.isEventStream(json[i & 1]) ? 1 : 0;
      }
      long after = mx.getCurrentThreadCpuTime();
      if (r >= 3) {
        model.append(' ').append(String.format("%.1f", (mid - before) / 1e7));
        type.append(' ').append(String.format("%.1f", (after - mid) / 1e7));
      }
    }
    System.out.println(model);
    System.out.println(type + " (" + sink + ")");
  }
}
