package io.sluice.rls.config;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A node's children by composite key ({@code key_value}), looked up with the request's key and
 * value apart: the same answer as {@code children.get(key + "_" + value)}, without building that
 * string on every call. Open addressing over {@link String#hashCode()} of the composite keys; the
 * hash of the pair is combined from the hashes of its parts (the value's is then cached in the
 * request's string). Immutable once built.
 */
final class ChildIndex {
  static final ChildIndex EMPTY = new ChildIndex(Map.of());

  private final String[] keys;
  private final int[] hashes;
  private final DescriptorNode[] nodes;
  private final int mask;

  ChildIndex(Map<String, DescriptorNode> children) {
    int size = Integer.highestOneBit(Math.max(1, children.size()) * 2 + 1) * 2;
    keys = new String[size];
    hashes = new int[size];
    nodes = new DescriptorNode[size];
    mask = size - 1;
    for (Map.Entry<String, DescriptorNode> e : children.entrySet()) {
      int h = e.getKey().hashCode();
      int i = h & mask;
      while (keys[i] != null) {
        i = (i + 1) & mask;
      }
      keys[i] = e.getKey();
      hashes[i] = h;
      nodes[i] = e.getValue();
    }
  }

  /** The child whose composite key is {@code key + "_" + value}, or null. */
  @Nullable DescriptorNode get(String key, String value) {
    int h = compositeHash(key, value);
    int keyLength = key.length();
    int length = keyLength + 1 + value.length();
    for (int i = h & mask; ; i = (i + 1) & mask) {
      String k = keys[i];
      if (k == null) {
        return null;
      }
      if (hashes[i] == h
          && k.length() == length
          && k.charAt(keyLength) == '_'
          && k.startsWith(key)
          && k.regionMatches(keyLength + 1, value, 0, value.length())) {
        return nodes[i];
      }
    }
  }

  /** {@code (key + "_" + value).hashCode()} from the parts' hash codes. */
  static int compositeHash(String key, String value) {
    int pow = 1; // 31^value.length(), mod 2^32 like the hash itself
    int base = 31;
    for (int n = value.length(); n > 0; n >>>= 1) {
      if ((n & 1) != 0) {
        pow *= base;
      }
      base *= base;
    }
    return (key.hashCode() * 31 + '_') * pow + value.hashCode();
  }
}
