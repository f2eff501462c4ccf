package io.sluice.extproc;

import io.grpc.Metadata;
import org.jspecify.annotations.Nullable;

/**
 * Reads the stream's gRPC initial metadata (Envoy's {@code grpc_service.initial_metadata} merged
 * with per-route {@code ExtProcPerRoute.overrides.grpc_initial_metadata}): HTTP clients cannot set
 * these, so they are trusted.
 *
 * <p>One instance per runtime snapshot ({@link ExtProcTables}): the keys come from that config (a
 * bounded set), built and validated once, not per request, and dropped with the snapshot on reload.
 */
final class InitialMetadata {
  private final java.util.concurrent.ConcurrentMap<String, Metadata.Key<String>> keys =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * The config's key strings are the same instances request after request: a short array scanned by
   * reference finds their keys without hashing (copy-on-write, bounded; misses use the map).
   */
  private volatile Object[] recent = new Object[0]; // String, Key, String, Key, ...

  private static final int RECENT_MAX = 64;
  private static final int KEYS_MAX = 10_000; // names come from the config; capped all the same

  @Nullable String get(@Nullable Metadata md, String key) {
    if (md == null) {
      return null;
    }
    Object[] r = recent;
    for (int i = 0; i < r.length; i += 2) {
      if (r[i] == key) {
        @SuppressWarnings("unchecked")
        Metadata.Key<String> k = (Metadata.Key<String>) r[i + 1];
        return md.get(k);
      }
    }
    if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
      return null;
    }
    Metadata.Key<String> k = keys.get(key);
    if (k == null) {
      k = Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER);
      if (keys.size() < KEYS_MAX) {
        keys.putIfAbsent(key, k);
      }
    }
    remember(key, k);
    return md.get(k);
  }

  private synchronized void remember(String key, Metadata.Key<String> k) {
    Object[] r = recent;
    if (r.length >= 2 * RECENT_MAX) {
      return;
    }
    Object[] next = java.util.Arrays.copyOf(r, r.length + 2);
    next[r.length] = key;
    next[r.length + 1] = k;
    recent = next;
  }
}
