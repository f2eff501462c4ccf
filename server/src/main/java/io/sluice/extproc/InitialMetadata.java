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
  private final byte[][] asciiNames; // the held text keys' names, by slot (else null)

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
    this.asciiNames = new byte[0][];
  }

  /** With {@code declared}'s keys held by their place in the list. */
  InitialMetadata(java.util.List<String> declared) {
    this.declared = declared.toArray(String[]::new);
    this.bySlot = new Metadata.Key<?>[this.declared.length];
    this.held = new boolean[this.declared.length];
    this.asciiNames = new byte[this.declared.length][];
    for (int i = 0; i < this.declared.length; i++) {
      String k = this.declared[i];
      try {
        bySlot[i] =
            k.endsWith(Metadata.BINARY_HEADER_SUFFIX)
                ? null
                : Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER);
        held[i] = true;
        Metadata.Key<?> text = bySlot[i];
        asciiNames[i] =
            text == null ? null : text.name().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        for (int j = 0; j < i && asciiNames[i] != null; j++) {
          if (java.util.Arrays.equals(asciiNames[j], asciiNames[i])) { // gRPC's name of an earlier
            asciiNames[i] = null;
            held[i] = false; // a repeat: read by its key ({@link #places} finds each name once)
          }
        }
      } catch (IllegalArgumentException e) {
        held[i] = false; // as before: the read itself refuses it
      }
    }
  }

  /** Whether {@code key} is the {@code slot}th declared key, held by its slot. */
  boolean holds(int slot, String key) {
    return slot >= 0
        && slot < declared.length
        && held[slot]
        && (declared[slot] == key || declared[slot].equals(key));
  }

  /**
   * Where each declared key's value is in {@code raw} (the stream's metadata as {@link
   * io.grpc.InternalMetadata#serialize} lays it out: name, value, name, ...), in one pass over its
   * names instead of one scan of them all per key: by slot, 1 + the place of the key's last value
   * (the one {@link Metadata#get} answers), 0 when absent or binary (never read as text), read as
   * 0..255; null when the metadata has too many entries for a byte (each key is then looked up).
   */
  byte @Nullable [] places(byte[][] raw) {
    if (raw.length > 254) {
      return null;
    }
    byte[] at = new byte[declared.length];
    for (int i = 0; i + 1 < raw.length; i += 2) {
      byte[] name = raw[i];
      for (int s = 0; s < asciiNames.length; s++) {
        byte[] k = asciiNames[s];
        if (k != null && k.length == name.length && java.util.Arrays.equals(k, name)) {
          at[s] = (byte) (i + 2); // 1 + the value's place; a later value replaces it
          break; // the held names are distinct (a repeated key is read by key)
        }
      }
    }
    return at;
  }

  /** The value at {@code place} ({@link #places}; 0: null), as {@link Metadata#get} parses it. */
  static @Nullable String valueAt(byte[][] raw, int place) {
    return place <= 0
        ? null
        : Metadata.ASCII_STRING_MARSHALLER.parseAsciiString(
            new String(raw[place - 1], java.nio.charset.StandardCharsets.US_ASCII));
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
