package io.sluice.wire;

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
    for (int i = 0; i < Long.BYTES; i++) {
      buf[pos++] = (byte) (v >>> (8 * i));
    }
  }

  /** The array, once exactly filled. */
  public byte[] done() {
    if (pos != buf.length) {
      throw new IllegalStateException("encoded " + pos + " of " + buf.length + " bytes");
    }
    return buf;
  }
}
