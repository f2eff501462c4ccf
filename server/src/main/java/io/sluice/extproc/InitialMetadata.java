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
 * The keys the config's signals declare are held by their slot ({@link
 * io.sluice.routing.RequestResolver#metadataNames()}), so a signal's read looks nothing up.
 */
final class InitialMetadata {
  // the declared keys by slot, and their gRPC keys (null: a binary key, never read as text)
  private final String[] declared;
  private final Metadata.@Nullable Key<?>[] bySlot;
  private final boolean[] held; // false: a key gRPC refuses, looked up (and refused) per read

  private final java.util.concurrent.ConcurrentMap<String, Metadata.Key<String>> keys =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * The config's key strings are the same instances request after request: a short array scanned by
   * reference finds their keys without hashing (copy-on-write, bounded; misses use the map).
   */
  private volatile Object[] recent = new Object[0]; // String, Key, String, Key, ...

  private static final int RECENT_MAX = 64;
  private static final int KEYS_MAX = 10_000; // names come from the config; capped all the same

  /** With no key held by slot (every read looks its key up). */
  InitialMetadata() {
    this.declared = new String[0];
    this.bySlot = new Metadata.Key<?>[0];
    this.held = new boolean[0];
  }

  /** With {@code declared}'s keys held by their place in the list. */
  InitialMetadata(java.util.List<String> declared) {
    this.declared = declared.toArray(String[]::new);
    this.bySlot = new Metadata.Key<?>[this.declared.length];
    this.held = new boolean[this.declared.length];
    for (int i = 0; i < this.declared.length; i++) {
      String k = this.declared[i];
      try {
        bySlot[i] =
            k.endsWith(Metadata.BINARY_HEADER_SUFFIX)
                ? null
                : Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER);
        held[i] = true;
      } catch (IllegalArgumentException e) {
        held[i] = false; // as before: the read itself refuses it
      }
    }
  }

  /** {@link #get(Metadata, String)} of {@code key}, the {@code slot}th declared key. */
  @Nullable String get(@Nullable Metadata md, int slot, String key) {
    if (slot < 0
        || slot >= declared.length
        || !held[slot]
        || (declared[slot] != key && !declared[slot].equals(key))) {
      return get(md, key);
    }
    if (md == null) {
      return null;
    }
    @SuppressWarnings("unchecked") // made with the ASCII marshaller above
    Metadata.Key<String> k = (Metadata.Key<String>) bySlot[slot];
    return k == null ? null : md.get(k);
  }

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
