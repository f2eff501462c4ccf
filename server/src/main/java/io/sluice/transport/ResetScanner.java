package io.sluice.transport;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;

/**
 * Reads one HTTP/2 connection's client bytes as far as frame headers go and counts <em>premature
 * resets</em>: a RST_STREAM from the client on a stream it opened and that never carried a DATA
 * payload. Envoy's own end-of-request resets follow the gRPC message, so they never count; a
 * rapid-reset flood (HEADERS, RST_STREAM, ...) counts every stream.
 *
 * <p>The limit is crossed at the reset that makes the count reach {@code maxPrematureResets} while
 * it is also at least {@code ratio} of the streams the connection opened (as Envoy's {@code
 * premature_reset_*} overload settings: a ratio over a minimum). It reads the 24-byte client
 * preface, then 9-byte frame headers (length, type, flags, stream id; frames split across reads are
 * joined in a 9-byte buffer) and skips payloads unread: HPACK, padding and everything else are
 * grpc's codec's to check. The counts cover the connection's life.
 *
 * <p>Concurrency: none; one connection's event loop owns it.
 */
final class ResetScanner {
  static final int PREFACE_BYTES = 24;
  static final int FRAME_HEADER_BYTES = 9;
  static final int DATA = 0x0;
  static final int HEADERS = 0x1;
  static final int RST_STREAM = 0x3;

  private final int maxPrematureResets;
  private final double ratio;
  private final BareStreams bare;
  private final byte[] header = new byte[FRAME_HEADER_BYTES];
  private int headerFill;
  private int prefaceLeft = PREFACE_BYTES;
  private int payloadLeft;
  private long streams;
  private long premature;
  private int highestStreamId;

  /**
   * @param maxPrematureResets premature resets that close the connection (at least 1)
   * @param ratio the share of the connection's streams they must also be, 0 .. 1
   * @param trackedStreams how many bare streams (opened, no DATA yet) are remembered
   */
  ResetScanner(int maxPrematureResets, double ratio, int trackedStreams) {
    if (maxPrematureResets < 1) {
      throw new IllegalArgumentException(
          "maxPrematureResets: " + maxPrematureResets + " (expected: >= 1)");
    }
    if (!(ratio >= 0 && ratio <= 1)) {
      throw new IllegalArgumentException("ratio: " + ratio + " (expected: 0 .. 1)");
    }
    this.maxPrematureResets = maxPrematureResets;
    this.ratio = ratio;
    this.bare = new BareStreams(trackedStreams);
  }

  /**
   * Reads {@code buf}'s readable bytes (its indexes do not move); true when a frame in them crossed
   * the limit (the rest of {@code buf} is then not read, and the scanner is done).
   */
  boolean scan(ByteBuf buf) {
    int i = buf.readerIndex();
    int end = buf.writerIndex();
    while (i < end) {
      if (prefaceLeft > 0) {
        int n = Math.min(prefaceLeft, end - i);
        prefaceLeft -= n;
        i += n;
      } else if (payloadLeft > 0) {
        int n = Math.min(payloadLeft, end - i);
        payloadLeft -= n;
        i += n;
      } else if (headerFill == 0 && end - i >= FRAME_HEADER_BYTES) {
        int length = buf.getUnsignedMedium(i);
        int type = buf.getUnsignedByte(i + 3);
        int stream = buf.getInt(i + 5) & 0x7fff_ffff;
        i += FRAME_HEADER_BYTES;
        if (frame(type, stream, length)) {
          return true;
        }
      } else {
        int n = Math.min(FRAME_HEADER_BYTES - headerFill, end - i);
        buf.getBytes(i, header, headerFill, n);
        headerFill += n;
        i += n;
        if (headerFill == FRAME_HEADER_BYTES) {
          headerFill = 0;
          int length = ((header[0] & 0xff) << 16) | ((header[1] & 0xff) << 8) | (header[2] & 0xff);
          int stream =
              ((header[5] & 0x7f) << 24)
                  | ((header[6] & 0xff) << 16)
                  | ((header[7] & 0xff) << 8)
                  | (header[8] & 0xff);
          if (frame(header[3] & 0xff, stream, length)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /** One frame's header; its payload is skipped. True when it crossed the limit. */
  private boolean frame(int type, int stream, int length) {
    payloadLeft = length;
    switch (type) {
      case HEADERS -> {
        // a new client stream (odd id above the last); a later HEADERS on it is its trailers
        if ((stream & 1) == 1 && stream > highestStreamId) {
          highestStreamId = stream;
          streams++;
          bare.add(stream);
        }
      }
      case DATA -> {
        if (length > 0) {
          bare.remove(stream);
        }
      }
      case RST_STREAM -> {
        if (bare.remove(stream)) {
          premature++;
          return premature >= maxPrematureResets && premature >= ratio * streams;
        }
      }
      default -> {}
    }
    return false;
  }

  /** The highest client stream id whose HEADERS were read. */
  int highestStreamId() {
    return highestStreamId;
  }

  /** Client streams opened on the connection. */
  long streams() {
    return streams;
  }

  /** Premature resets on the connection. */
  long prematureResets() {
    return premature;
  }
}
