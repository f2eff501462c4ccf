package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The thread CPU of what the handler reads of the floor's response headers ({@code
 * LlmStream.messages()}'s third message, parsed once): {@link UpstreamFailures#status} and the
 * {@code content-type} ({@link UpstreamFailures#contentType}; the test of that type the usage
 * reader makes is in {@code io.sluice.core.estimate.ModelPartsCpu}). A plain loop for comparing two
 * jars run alternately (a jar from before {@code contentType}: compile this file against it with
 * that line as {@code header(h, "content-type", "application/json")}):
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.ResponseHeaderReadCpu
 * </pre>
 *
 * Prints ten rounds of 10,000,000 after three to warm up.
 */
public final class ResponseHeaderReadCpu {
  private ResponseHeaderReadCpu() {}

  public static void main(String[] args) throws Exception {
    Inbound h = Inbound.parse(io.sluice.harness.LlmStream.messageBytes()[2]);
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    StringBuilder out = new StringBuilder("status + content-type, cpu ns/op (10 x 10M):");
    for (int r = 0; r < 13; r++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 10_000_000; i++) {
        sink += UpstreamFailures.status(h, false);
        String type = UpstreamFailures.contentType(h); // before it: header(h, "content-type", ..)
        sink += type == null ? 0 : type.length();
      }
      if (r >= 3) {
        out.append(' ')
            .append(String.format("%.1f", (mx.getCurrentThreadCpuTime() - before) / 1e7));
      }
    }
    System.out.println(out + " (" + sink + ")");
  }
}
