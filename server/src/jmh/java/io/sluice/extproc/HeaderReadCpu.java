package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;

/**
 * The thread CPU of reading the one-shot request headers ({@code LlmStream.oneShotHeaders()}, the
 * 11 headers of the floor) as the handler does: the wire pass ({@link Inbound#parse}), the header
 * index's pass over the keys ({@link EnvoySignals.HeaderIndex#placesNear}, the embedded default
 * config's names) and the {@code :path} value. A plain loop for comparing two jars run alternately:
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.HeaderReadCpu
 * </pre>
 *
 * Prints ten rounds of 1,000,000 after three to warm up; with {@code locate}, of the index's pass
 * alone on one parsed message ({@link EnvoySignals.HeaderIndex#placesNear}: the part the parse
 * hides), and of that pass's key lookups alone ({@code locate} on each key, no array made).
 */
public final class HeaderReadCpu {
  private HeaderReadCpu() {}

  public static void main(String[] args) throws Exception {
    byte[] request = io.sluice.harness.LlmStream.oneShotHeaders().toByteArray();
    EnvoySignals.HeaderIndex index =
        new EnvoySignals.HeaderIndex(
            List.of(
                "x-tenant-id",
                "x-sluice-timeout-ms",
                "idempotency-key",
                "x-stainless-retry-count",
                "x-envoy-attempt-count",
                "content-length",
                ":path",
                ":method",
                "content-type"));
    int path = index.slot(":path");
    if (args.length > 0 && args[0].equals("locate")) {
      locate(index, Inbound.parse(request));
      return;
    }
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    StringBuilder out = new StringBuilder("parse + locate + :path, cpu ns/op (10 x 1M):");
    for (int r = 0; r < 13; r++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 1_000_000; i++) {
        Inbound in = Inbound.parse(request);
        byte[] places = index.placesNear(in);
        String p = index.valueAt(in, places[path] & 0xFF, path);
        sink += places[0] + (p == null ? 0 : p.length());
      }
      if (r >= 3) {
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
      }
    }
    System.out.println(out + " (" + sink + ")");
  }

  private static void locate(EnvoySignals.HeaderIndex index, Inbound in) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    StringBuilder out = new StringBuilder("placesNear, cpu ns/op (10 x 10M):");
    for (int r = 0; r < 13; r++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 10_000_000; i++) {
        sink += index.placesNear(in)[i & 7];
      }
      if (r >= 3) {
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000 / 10.0);
      }
    }
    System.out.println(out + " (" + sink + ")");
  }
}
