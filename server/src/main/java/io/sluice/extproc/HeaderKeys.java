package io.sluice.extproc;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The UTF-8 bytes of the header names an admit answer sets, each encoded once: they are constants
 * of Sluice and of the config (its own headers, a plan's), so the set is small; it is bounded all
 * the same. The arrays are shared by every answer and never written to.
 */
final class HeaderKeys {
  private HeaderKeys() {}

  private static final int MAX = 256;

  private static final ConcurrentMap<String, byte[]> KEYS = new ConcurrentHashMap<>();

  static byte[] utf8(String key) {
    byte[] k = KEYS.get(key);
    if (k == null) {
      k = key.getBytes(StandardCharsets.UTF_8);
      if (KEYS.size() < MAX) {
        KEYS.putIfAbsent(key, k);
      }
    }
    return k;
  }

  /** The names of {@code headers}, in its order, each encoded once ({@link #utf8}). */
  static byte[][] keys(java.util.Map<String, String> headers) {
    byte[][] out = new byte[headers.size()][];
    int i = 0;
    for (String k : headers.keySet()) {
      out[i++] = utf8(k);
    }
    return out;
  }

  /**
   * The values of {@code headers}, in its order, as protobuf-java writes a string (null: empty).
   */
  static byte[][] values(java.util.Map<String, String> headers) {
    byte[][] out = new byte[headers.size()][];
    int i = 0;
    for (String v : headers.values()) {
      out[i++] = v == null ? new byte[0] : v.getBytes(StandardCharsets.UTF_8);
    }
    return out;
  }
}
