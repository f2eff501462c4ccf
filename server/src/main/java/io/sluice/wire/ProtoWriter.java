package io.sluice.wire;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Protobuf wire format into an exactly sized array: what {@code CodedOutputStream} does for the few
 * field kinds Sluice's pre-encoded answers use, without its per-message encoder object and second
 * UTF-8 pass. Callers compute the size first ({@link #lenField}, {@link #varintSize}); the encoders
 * that use it are checked byte for byte against protobuf-java in their tests.
 */
public final class ProtoWriter {
  public static final int VARINT = 0;
  public static final int FIXED64 = 1;
  public static final int LEN = 2;

  /** A fixed64 in one store: protobuf's fixed64 is little-endian. */
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private final byte[] buf;
  private int pos;

  public ProtoWriter(int size) {
    buf = new byte[size];
  }

  /** Bytes of {@code v} as an unsigned varint (an int is taken as unsigned 32 bits). */
  public static int varintSize(int v) {
    return varintSize(v & 0xFFFF_FFFFL);
  }

  public static int varintSize(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  /** Bytes of a whole length-delimited field whose content is {@code contentLength} bytes. */
  public static int lenField(int field, int contentLength) {
    return varintSize(field << 3) + varintSize(contentLength) + contentLength;
  }

  /** Bytes of a whole varint field. */
  public static int varintField(int field, long value) {
    return varintSize(field << 3) + varintSize(value);
  }

  public void tag(int field, int wireType) {
    varint((field << 3) | wireType);
  }

  /** An unsigned varint: an int is written as unsigned 32 bits (uint32, enums of 0 or more). */
  public void varint(int v) {
    while ((v & ~0x7F) != 0) {
      buf[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[pos++] = (byte) v;
  }

  public void varint(long v) {
    while ((v & ~0x7FL) != 0) {
      buf[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[pos++] = (byte) v;
  }

  /** Tag and length of a length-delimited field whose content follows. */
  public void len(int field, int contentLength) {
    tag(field, LEN);
    varint(contentLength);
  }

  public void bytes(int field, byte[] b) {
    len(field, b.length);
    raw(b);
  }

  public void raw(byte[] b) {
    System.arraycopy(b, 0, buf, pos, b.length);
    pos += b.length;
  }

  public void fixed64(long v) {
    LONG_LE.set(buf, pos, v);
    pos += Long.BYTES;
  }

  /** A fixed64's 8 bytes at {@code at} of {@code out} (an array encoded beforehand). */
  public static void fixed64(byte[] out, int at, long v) {
    LONG_LE.set(out, at, v);
  }

  /** The length of {@code Long.toString(v)}: the bytes {@link #decimal} writes. */
  public static int decimalSize(long v) {
    if (v < 0) {
      return v == Long.MIN_VALUE ? 20 : 1 + decimalSize(-v);
    }
    int n = 1;
    while (n < POWERS_OF_TEN.length && v >= POWERS_OF_TEN[n]) {
      n++;
    }
    return n;
  }

  /** 10^i: a number of i + 1 digits is at least 10^i. */
  private static final long[] POWERS_OF_TEN = powersOfTen();

  private static long[] powersOfTen() {
    long[] p = new long[19]; // 10^18 is the largest power of ten a long holds
    p[0] = 1;
    for (int i = 1; i < p.length; i++) {
      p[i] = p[i - 1] * 10;
    }
    return p;
  }

  /** {@code Long.toString(v)} as ASCII, without a String: a header value's digits. */
  public void decimal(long v) {
    decimal(v, decimalSize(v));
  }

  /** {@link #decimal(long)} of a {@code v} whose {@link #decimalSize} the caller has. */
  public void decimal(long v, int size) {
    decimal(buf, pos, v, size);
    pos += size;
  }

  private static final byte[] MIN_VALUE =
      Long.toString(Long.MIN_VALUE).getBytes(StandardCharsets.US_ASCII);

  /**
   * {@code Long.toString(v)} as ASCII at {@code at} of {@code out}, {@code size} its {@link
   * #decimalSize}: a number written over in an array encoded beforehand.
   */
  public static void decimal(byte[] out, int at, long v, int size) {
    if (v == Long.MIN_VALUE) {
      System.arraycopy(MIN_VALUE, 0, out, at, MIN_VALUE.length);
      return;
    }
    int end = at + size;
    if (v < 0) {
      out[at++] = '-';
      v = -v;
    }
    for (int i = end - 1; i >= at; i--) {
      out[i] = (byte) ('0' + (v % 10));
      v /= 10;
    }
  }

  /** Bytes written so far: where the next byte goes. */
  public int position() {
    return pos;
  }

  /** {@code s.length()} when every char of {@code s} is ASCII (its UTF-8 is its chars), else -1. */
  public static int asciiLength(String s) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      if (s.charAt(i) >= 0x80) {
        return -1;
      }
    }
    return n;
  }

  /** The chars of {@code s}, which {@link #asciiLength} found ASCII, one byte each. */
  public void ascii(String s) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      buf[pos + i] = (byte) s.charAt(i);
    }
    pos += n;
  }

  /** The array, once exactly filled. */
  public byte[] done() {
    if (pos != buf.length) {
      throw new IllegalStateException("encoded " + pos + " of " + buf.length + " bytes");
    }
    return buf;
  }
}
