package io.sluice.core.estimate;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.EncodingType;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Maps a model name to the BPE encoding of its family, or none. The two encodings are loaded once
 * per JVM (the first instance pays ~0.5 s); lookups are cached per model name.
 *
 * <p>Concurrency: thread-safe; the cache is a {@link ConcurrentHashMap} that stops growing at
 * {@link #MAX_CACHED_MODELS} entries (model names come from request bodies, so the set is
 * unbounded; names longer than {@link #MAX_CACHED_MODEL_LENGTH} are not cached either); uncached
 * lookups are a few prefix checks. The names read from bytes ({@link #name}) are kept in a small
 * table overwritten as names come.
 */
final class ModelEncodings {
  static final int MAX_CACHED_MODELS = 1024;
  static final int MAX_CACHED_MODEL_LENGTH = 128;

  private static final String[] O200K_PREFIXES = {
    "gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4", "codex-"
  };
  private static final String[] CL100K_PREFIXES = {
    "gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002"
  };

  private final ConcurrentHashMap<String, Optional<Encoding>> cache = new ConcurrentHashMap<>();

  // the model names read from bodies' bytes lately, by a hash of their bytes (name()); written
  // without a lock: a Named is immutable, so a racing read sees a whole name or none
  private final @Nullable Named[] names = new Named[64];

  /** A name read from bytes, and a copy of those bytes (compared at once, not per character). */
  private static final class Named {
    final String name;
    final byte[] bytes;

    Named(String name, byte[] bytes) {
      this.name = name;
      this.bytes = bytes;
    }
  }

  /** Loads the shared encodings now, so the first request does not pay for it. */
  ModelEncodings() {
    Shared.O200K.getName();
  }

  /** The encoding for {@code model}, or null when the family is unknown (use the heuristic). */
  @Nullable Encoding forModel(@Nullable String model) {
    if (model == null) {
      return null;
    }
    Last last = this.last;
    if (last != null && last.model == model) { // the same name as the last lookup's
      return last.encoding;
    }
    Optional<Encoding> cached = cache.get(model);
    if (cached == null) {
      cached = Optional.ofNullable(lookup(model));
      if (model.length() <= MAX_CACHED_MODEL_LENGTH && cache.size() < MAX_CACHED_MODELS) {
        cache.putIfAbsent(model, cached);
      }
    }
    Encoding encoding = cached.orElse(null);
    if (last == null || !last.model.equals(model)) { // an equal name's copy keeps the last
      this.last = new Last(model, encoding);
    }
    return encoding;
  }

  /** A name looked up and its encoding (immutable: a racing read sees a whole pair). */
  private record Last(String model, @Nullable Encoding encoding) {}

  // the last name looked up, matched by identity: the encoding is a function of the name, and most
  // requests name the model the last body named (name() hands out the same String), so they skip
  // the map; written without a lock, as names
  private @Nullable Last last;

  /**
   * The model name whose UTF-8 bytes are {@code b[from, to)}: the String made for the same bytes
   * lately when there is one (a body's model read without a copy, its hash computed once), else a
   * new one. A name matches when its bytes are the same (so is its text).
   */
  String name(byte[] b, int from, int to) {
    int n = to - from;
    if (n == 0 || n > MAX_CACHED_MODEL_LENGTH) {
      return new String(b, from, n, StandardCharsets.UTF_8);
    }
    int slot = (n * 31 + b[from] * 7 + b[to - 1]) & (names.length - 1);
    Named s = names[slot];
    if (s != null && Arrays.equals(s.bytes, 0, s.bytes.length, b, from, to)) {
      return s.name;
    }
    String name = new String(b, from, n, StandardCharsets.UTF_8);
    names[slot] = new Named(name, Arrays.copyOfRange(b, from, to));
    return name;
  }

  static @Nullable Encoding lookup(String model) {
    String m = model.trim().toLowerCase(Locale.ROOT);
    if (m.startsWith("ft:")) {
      m = m.substring(3);
    }
    int slash = m.lastIndexOf('/');
    if (slash >= 0) {
      m = m.substring(slash + 1); // "openai/gpt-4o" as routers name it
    }
    for (String prefix : O200K_PREFIXES) {
      if (m.startsWith(prefix)) {
        return Shared.O200K;
      }
    }
    for (String prefix : CL100K_PREFIXES) {
      if (m.startsWith(prefix)) {
        return Shared.CL100K;
      }
    }
    return null;
  }

  static Encoding o200k() {
    return Shared.O200K;
  }

  static Encoding cl100k() {
    return Shared.CL100K;
  }

  /** Lazy holder: the jtokkit registry is thread-safe and its encodings are immutable. */
  private static final class Shared {
    static final EncodingRegistry REGISTRY = Encodings.newLazyEncodingRegistry();
    static final Encoding O200K = REGISTRY.getEncoding(EncodingType.O200K_BASE);
    static final Encoding CL100K = REGISTRY.getEncoding(EncodingType.CL100K_BASE);
  }
}
