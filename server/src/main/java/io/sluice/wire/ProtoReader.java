package io.sluice.wire;

import org.jspecify.annotations.Nullable;

/**
 * The checks and steps of a one-pass protobuf wire reader, for the hand-written readers of hot
 * messages (decision 0004). Every step reports malformed input (a bad tag, an over-long varint, a
 * length past the end, a group or an invalid wire type) instead of throwing, so the reader can hand
 * the message to protobuf-java, which then accepts or refuses it exactly as it always does.
 */
public abstract class ProtoReader {
  protected static final int VARINT = 0;
  protected static final int FIXED64 = 1;
  protected static final int LEN = 2;
  protected static final int FIXED32 = 5;

  /** The message bytes (never modified); null in a reader that holds a parsed message instead. */
  protected final byte[] bytes;

  /** The read position of the pass. */
  protected int pos;

  protected ProtoReader(byte[] bytes) {
    this.bytes = bytes;
  }

  /**
   * Whether [off, off + len) is all ASCII: its bytes ORed together eight at a time, the last eight
   * read once more (overlapping; a run shorter than eight is one masked word, {@link
   * ByteKeys#head}).
   */
  protected final boolean ascii(int off, int len) {
    long words;
    if (len <= 8) {
      words = ByteKeys.head(bytes, off, len);
    } else {
      int e = off + len;
      words = ByteKeys.word(bytes, e - 8);
      for (int i = off; i + 8 <= e; i += 8) {
        words |= ByteKeys.word(bytes, i);
      }
    }
    return (words & 0x8080808080808080L) == 0;
  }

  /**
   * The UTF-8 string of [off, off + len), or {@code known} itself when that is its bytes, every one
   * ASCII: a byte of 0x80 or more is negative in Java, so it equals no char of {@code known}, and
   * equal ASCII bytes decode to the same chars. A caller that often sees the same value (a
   * header's) hands its last one in and gets it back instead of a new String.
   */
  protected final String string(int off, int len, @Nullable String known) {
    if (known != null && known.length() == len) {
      int k = 0;
      while (k < len && bytes[off + k] == known.charAt(k)) {
        k++;
      }
      if (k == len) {
        return known;
      }
    }
    return new String(bytes, off, len, java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * When [from, end) is exactly two LEN fields, tag {@code first} then tag {@code second} (one-byte
   * tags), each with a one-byte length: the first's length; else -1 (read it field by field).
   */
  protected final int shortPair(int from, int end, int first, int second) {
    if (end - from < 4 || bytes[from] != first) {
      return -1;
    }
    int a = bytes[from + 1];
    int at = from + 2 + a; // the second's tag, when the first's length is one byte (a >= 0)
    return a >= 0 && at + 2 <= end && bytes[at] == second && at + 2 + bytes[at + 1] == end ? a : -1;
  }

  /** A field's tag; -1 when malformed or its field number is 0 (invalid). */
  protected final int tag(int end) {
    int tag = varint32(end);
    return tag >>> 3 == 0 ? -1 : tag;
  }

  /** Length of a LEN field whose tag was just read (pos then at its content), or -1. */
  protected final int length(int type, int end) {
    if (type != LEN) {
      return -1;
    }
    int len = varint32(end);
    if (len < 0 || len > end - pos) {
      return -1;
    }
    return len;
  }

  /**
   * The length of the LEN field whose content begins at {@code off} (0 for {@code off} -1), read
   * back from the varint just before it: that varint's last byte is the one byte of it below 0x80,
   * and the byte before its first is the last of the field's tag, also below 0x80. So a varint of
   * any form the pass accepted ({@link #length}), over-long ones too, reads back as it read
   * forward. Only for an offset the pass found right after a tag and a length it read.
   */
  protected final int lengthBefore(int off) {
    if (off < 0) {
      return 0;
    }
    int p = off - 1;
    int len = bytes[p];
    while (bytes[p - 1] < 0) { // a byte of the varint that continues (bit 7 set)
      p--;
      len = (len << 7) | (bytes[p] & 0x7F);
    }
    return len;
  }

  /** Skips an unknown field's value; false for groups, bad wire types and truncation. */
  protected final boolean skip(int type, int end) {
    switch (type) {
      case VARINT -> {
        return varint64(end) != Long.MIN_VALUE;
      }
      case FIXED64 -> {
        pos += 8;
        return pos <= end;
      }
      case FIXED32 -> {
        pos += 4;
        return pos <= end;
      }
      case LEN -> {
        int len = length(type, end);
        if (len < 0) {
          return false;
        }
        pos += len;
        return true;
      }
      default -> {
        return false; // groups (3, 4) and invalid types 6, 7: protobuf-java decides
      }
    }
  }

  /**
   * A varint that must fit in 31 bits (tags, lengths); -1 when it is longer, truncated or negative.
   */
  protected final int varint32(int end) {
    if (pos < end && bytes[pos] >= 0) { // one byte: almost every tag and length of a message
      return bytes[pos++];
    }
    int result = 0;
    for (int shift = 0; shift < 32; shift += 7) {
      if (pos >= end) {
        return -1;
      }
      byte b = bytes[pos++];
      result |= (b & 0x7F) << shift;
      if (b >= 0) {
        return result < 0 || (shift == 28 && (b & 0x70) != 0) ? -1 : result;
      }
    }
    return -1;
  }

  /**
   * The value of a varint field whose tag (of wire type {@code type}) was just read; Long.MIN_VALUE
   * when the field is not a varint or is malformed.
   */
  protected final long varintValue(int type, int end) {
    return type == VARINT ? varint64(end) : Long.MIN_VALUE;
  }

  /** Any varint (up to 10 bytes); Long.MIN_VALUE when malformed or truncated. */
  protected final long varint64(int end) {
    if (pos < end && bytes[pos] >= 0) { // one byte: a bool, a small enum
      return bytes[pos++];
    }
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end) {
        return Long.MIN_VALUE;
      }
      byte b = bytes[pos++];
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        return result; // (a value of Long.MIN_VALUE reads as malformed: protobuf-java decides)
      }
    }
    return Long.MIN_VALUE;
  }

  /** The whole message of a gRPC marshaller's stream, in an exactly sized array. */
  public static byte[] readAll(java.io.InputStream stream) throws java.io.IOException {
    if (!(stream instanceof io.grpc.KnownLength)) {
      return stream.readAllBytes();
    }
    int size = stream.available(); // gRPC's message streams know their length
    byte[] b = new byte[size];
    int n = 0;
    while (n < size) {
      int r = stream.read(b, n, size - n);
      if (r < 0) {
        return java.util.Arrays.copyOf(b, n);
      }
      n += r;
    }
    int more = stream.read();
    if (more < 0) {
      return b;
    }
    java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream(size * 2 + 16);
    all.write(b, 0, n);
    all.write(more);
    stream.transferTo(all);
    return all.toByteArray();
  }
}
