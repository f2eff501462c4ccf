package io.sluice.extproc;

import io.grpc.Metadata;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;

/**
 * The thread CPU of a stream's reads of declared metadata keys (the embedded default's eight signal
 * sources and one more, each read by its slot through {@link EnvoySignals#metadata(int, String)}, a
 * new {@link EnvoySignals} per stream as the handler makes): on the bench's three-entry metadata,
 * or with {@code envoy} on seven entries of which two are declared keys. Uses only what main has,
 * so the same source compiles against the parent commit's jar; a plain loop for two jars run
 * alternately:
 *
 * <pre>
 * javac -d /tmp/cpu -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/extproc/MetadataReadCpu.java
 * java -cp /tmp/cpu:server/target/benchmarks.jar io.sluice.extproc.MetadataReadCpu [envoy]
 * </pre>
 *
 * Prints ten rounds of 1,000,000 streams after three to warm up.
 */
public final class MetadataReadCpu {
  private MetadataReadCpu() {}

  public static void main(String[] args) throws Exception {
    List<String> names =
        List.of(
            "x-sluice-tenant",
            "x-sluice-class",
            "x-sluice-pool",
            "x-sluice-route",
            "x-sluice-format",
            "x-sluice-max-message-timeout-ms",
            "x-sluice-deadline-ms",
            "x-sluice-fanout",
            "x-sluice-workflow");
    String[] keys = names.toArray(String[]::new);
    InitialMetadata declared = new InitialMetadata(names);
    Metadata md = new Metadata();
    md.put(text("content-type"), "application/grpc");
    md.put(text("te"), "trailers");
    md.put(text("user-agent"), "envoy");
    if (args.length > 0 && args[0].equals("envoy")) {
      md.put(text("x-sluice-tenant"), "acme");
      md.put(text("x-sluice-class"), "interactive");
      md.put(text("x-envoy-internal"), "true");
      md.put(text("grpc-accept-encoding"), "gzip");
    }
    Inbound in = Inbound.parse(io.sluice.harness.LlmStream.oneShotHeaders().toByteArray());
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    StringBuilder out = new StringBuilder("metadata reads (9 keys), cpu ns/op (10 x 1M):");
    for (int r = 0; r < 13; r++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 1_000_000; i++) {
        EnvoySignals s = new EnvoySignals(md, in, null, declared);
        for (int k = 0; k < keys.length; k++) {
          String v = s.metadata(k, keys[k]);
          sink += v == null ? 1 : v.length();
        }
      }
      if (r >= 3) {
        out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
      }
    }
    System.out.println(out + " (" + sink + ")");
  }

  private static Metadata.Key<String> text(String name) {
    return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
  }
}
