package io.sluice.wire;

import java.nio.ByteOrder;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * A fixed set of byte strings (header names as UTF-8), each with a slot, laid out to find a run of
 * wire bytes among them without a call to {@link Arrays#equals} per candidate: by length, and per
 * name its first and last eight bytes as two longs (little-endian; a name shorter than eight bytes
 * is one word, zero above its length). A run of at most 16 bytes is compared by those two words
 * alone (together they cover every byte of it); a longer one compares its middle too. The answer is
 * exactly that of comparing the bytes: equal words hold equal bytes and the lengths are equal.
 */
public final class ByteKeys {
  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  // by length: the names of that length, their slots, first words and last words
  private final byte[][][] names;
  private final int[][] slots;
  private final long[][] heads;
  private final long[][] tails;
  // bit n set: a name of n bytes (n < 64); a header of a length no name has (most) stops here
  private final long lengths;

  /** {@code names[i]} held at slot {@code slots[i]} (the names are distinct). */
  public ByteKeys(byte[][] names, int[] slots) {
    int max = 0;
    for (byte[] n : names) {
      max = Math.max(max, n.length);
    }
    this.names = new byte[max + 1][][];
    this.slots = new int[max + 1][];
    this.heads = new long[max + 1][];
    this.tails = new long[max + 1][];
    long mask = 0;
    for (int i = 0; i < names.length; i++) {
      byte[] n = names[i];
      int len = n.length;
      mask |= len < 64 ? 1L << len : 0;
      byte[][] same = this.names[len];
      int k = same == null ? 0 : same.length;
      this.names[len] = same == null ? new byte[1][] : Arrays.copyOf(same, k + 1);
      this.names[len][k] = n;
      this.slots[len] = grow(this.slots[len], k, slots[i]);
      this.heads[len] = grow(this.heads[len], k, head(n, 0, len));
      this.tails[len] = grow(this.tails[len], k, tail(n, 0, len));
    }
    this.lengths = mask;
  }

  private static int[] grow(int @Nullable [] a, int k, int v) {
    int[] out = a == null ? new int[1] : Arrays.copyOf(a, k + 1);
    out[k] = v;
    return out;
  }

  private static long[] grow(long @Nullable [] a, int k, long v) {
    long[] out = a == null ? new long[1] : Arrays.copyOf(a, k + 1);
    out[k] = v;
    return out;
  }

  /** The slot of the name that is exactly bytes [off, off + len) of {@code b}, or -1. */
  public int find(byte[] b, int off, int len) {
    if (len < 64 ? (lengths & (1L << len)) == 0 : len >= heads.length) {
      return -1; // no name of this length
    }
    long[] hs = heads[len];
    if (hs == null) {
      return -1;
    }
    long h = head(b, off, len);
    long t = len > 8 ? word(b, off + len - 8) : h; // tail(): the head itself when that short
    long[] ts = tails[len];
    for (int j = 0; j < hs.length; j++) {
      if (hs[j] == h
          && ts[j] == t
          && (len <= 16 || Arrays.equals(b, off + 8, off + len - 8, names[len][j], 8, len - 8))) {
        return slots[len][j];
      }
    }
    return -1;
  }

  /**
   * The first {@code min(len, 8)} bytes of [off, off + len) as a little-endian long, zero above
   * them ({@code off} may be anything when {@code len} is 0). Reads past the run (masked off) when
   * the array has eight bytes there, else byte by byte.
   */
  static long head(byte[] b, int off, int len) {
    if (len >= 8) {
      return (long) LONGS.get(b, off);
    }
    if (len == 0) {
      return 0;
    }
    if (off + 8 <= b.length) {
      return (long) LONGS.get(b, off) & ((1L << (len << 3)) - 1);
    }
    long w = 0;
    for (int k = len - 1; k >= 0; k--) {
      w = (w << 8) | (b[off + k] & 0xFF);
    }
    return w;
  }

  /** The last eight bytes of [off, off + len) as a long; the run's {@link #head} when shorter. */
  static long tail(byte[] b, int off, int len) {
    return len > 8 ? (long) LONGS.get(b, off + len - 8) : head(b, off, len);
  }

  /** Eight bytes at {@code off} as a little-endian long. */
  static long word(byte[] b, int off) {
    return (long) LONGS.get(b, off);
  }
}
