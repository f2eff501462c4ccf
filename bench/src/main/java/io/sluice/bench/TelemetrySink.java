package io.sluice.bench;

import io.sluice.harness.OtlpReceiver;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.jspecify.annotations.Nullable;

/**
 * The floor's {@code sluice-telemetry} target exports to a live OTLP sink: a receiver that answers
 * every export and keeps nothing ({@link OtlpReceiver#discarding}), so the exporter sends and is
 * done, as against a collector, and what the target's CPU shows is the request path (an exporter
 * aimed at a closed port retries with backoff in the server's process instead). With {@code floor
 * --separate} the generator's process serves it ({@link FloorTargets#separate}: the sink's CPU is
 * not the server's); in one process, or {@code floor --serve sluice-telemetry} without {@code
 * --otlp-endpoint}, this process does.
 */
final class TelemetrySink {
  private static @Nullable OtlpReceiver local;

  private TelemetrySink() {}

  /** Telemetry on, 1 % of requests sampled, exporting to {@code endpoint}. */
  static String policy(String endpoint) {
    return "\ntelemetry: {enabled: true, endpoint: \""
        + endpoint
        + "\", sampling: {ratio: 0.01}}\n";
  }

  /** {@code given}, or the endpoint of a discarding receiver in this process (started once). */
  static synchronized String endpoint(@Nullable String given) {
    if (given != null) {
      return given;
    }
    OtlpReceiver r = local;
    if (r == null) {
      r = start();
      local = r;
    }
    return r.endpoint();
  }

  /** A discarding receiver on 127.0.0.1. */
  static OtlpReceiver start() {
    try {
      return OtlpReceiver.discarding();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
