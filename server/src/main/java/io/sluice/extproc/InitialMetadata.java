package io.sluice.extproc;

import io.grpc.Metadata;

/**
 * Reads the stream's gRPC initial metadata (Envoy's {@code grpc_service.initial_metadata} merged
 * with per-route {@code ExtProcPerRoute.overrides.grpc_initial_metadata}): HTTP clients cannot set
 * these, so they are trusted.
 */
final class InitialMetadata {
  private InitialMetadata() {}

  /** Keys come from the config (a bounded set): built and validated once, not per request. */
  private static final java.util.concurrent.ConcurrentMap<String, Metadata.Key<String>> KEYS =
      new java.util.concurrent.ConcurrentHashMap<>();

  static String get(Metadata md, String key) {
    if (md == null || key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
      return null;
    }
    Metadata.Key<String> k = KEYS.get(key);
    if (k == null) {
      k = KEYS.computeIfAbsent(key, n -> Metadata.Key.of(n, Metadata.ASCII_STRING_MARSHALLER));
    }
    return md.get(k);
  }
}
