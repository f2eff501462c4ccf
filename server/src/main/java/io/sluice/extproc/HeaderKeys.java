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
}
