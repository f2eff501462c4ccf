package io.sluice.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The frame-header scanner and its count of premature resets, on hand-made client bytes. */
class ResetScannerTest {
  private static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  private ResetScannerTest frame(int type, int stream, int length) {
    out.write(length >>> 16);
    out.write(length >>> 8);
    out.write(length);
    out.write(type);
    out.write(0);
    out.write(stream >>> 24);
    out.write(stream >>> 16);
    out.write(stream >>> 8);
    out.write(stream);
    for (int i = 0; i < length; i++) {
      out.write(0x5a); // payload bytes that look like nothing in particular
    }
    return this;
  }

  private ResetScannerTest headers(int stream) {
    return frame(ResetScanner.HEADERS, stream, 40);
  }

  private ResetScannerTest data(int stream, int length) {
    return frame(ResetScanner.DATA, stream, length);
  }

  private ResetScannerTest reset(int stream) {
    return frame(ResetScanner.RST_STREAM, stream, 4);
  }

  private byte[] bytes() {
    return out.toByteArray();
  }

  private ResetScannerTest preface() {
    out.writeBytes(PREFACE);
    return frame(0x4, 0, 0); // SETTINGS
  }

  /** Feeds {@code bytes} in reads of {@code chunk} bytes; the read index that crossed, or -1. */
  private static int feed(ResetScanner s, byte[] bytes, int chunk) {
    for (int i = 0; i < bytes.length; i += chunk) {
      ByteBuf b = Unpooled.wrappedBuffer(bytes, i, Math.min(chunk, bytes.length - i));
      if (s.scan(b)) {
        return i / chunk;
      }
      assertThat(b.readerIndex()).as("the scanner leaves the indexes alone").isZero();
    }
    return -1;
  }

  @Test
  void rapidReset_crossesAtTheNthPrematureReset_whateverTheReadBoundaries() {
    preface();
    for (int id = 1; id <= 2 * 10 - 1; id += 2) {
      headers(id).reset(id);
    }
    byte[] flood = bytes();
    for (int chunk : new int[] {1, 2, 7, 9, 10, 64, flood.length}) {
      ResetScanner s = new ResetScanner(10, 0.5, 64);
      int crossedAt = feed(s, flood, chunk);
      // the read holding the last byte of the 10th RST_STREAM's header (its 4-byte payload after)
      assertThat(crossedAt).as("chunk %d", chunk).isEqualTo((flood.length - 5) / chunk);
      assertThat(s.prematureResets()).isEqualTo(10);
      assertThat(s.streams()).isEqualTo(10);
      assertThat(s.highestStreamId()).isEqualTo(19);
    }
  }

  @Test
  void streamsResetAfterTheirMessage_likeEnvoys_neverCount() {
    preface();
    for (int id = 1; id < 20_000; id += 2) {
      headers(id).data(id, 120).reset(id);
    }
    ResetScanner s = new ResetScanner(1, 0.0, 64);
    assertThat(feed(s, bytes(), 4096)).isEqualTo(-1);
    assertThat(s.prematureResets()).isZero();
    assertThat(s.streams()).isEqualTo(10_000);
  }

  @Test
  void prematureResets_underTheRatio_doNotCross_overItTheyDo() {
    preface();
    // 3000 streams, every third reset before its message: 1000 premature, a third of the streams
    for (int i = 0, id = 1; i < 3_000; i++, id += 2) {
      headers(id);
      if (i % 3 != 0) {
        data(id, 50);
      }
      reset(id);
    }
    ResetScanner s = new ResetScanner(100, 0.5, 64);
    assertThat(feed(s, bytes(), 1000)).isEqualTo(-1);
    assertThat(s.prematureResets()).isEqualTo(1_000);
    // then a flood: crosses once premature resets reach half the streams
    out.reset();
    for (int i = 0, id = 6_001; i < 2_000; i++, id += 2) {
      headers(id).reset(id);
    }
    assertThat(feed(s, bytes(), 9)).isNotNegative();
    assertThat(s.prematureResets()).isEqualTo(2_000);
    assertThat(s.streams()).isEqualTo(4_000);
  }

  @Test
  void emptyData_trailersAndUnknownStreams_areNotAMessage_orANewStream() {
    preface();
    headers(1).data(1, 0).reset(1); // an empty DATA (end of stream) is no message
    headers(3).data(3, 10).headers(3).reset(3); // trailers on 3 open nothing new
    reset(99); // never opened
    headers(2).reset(2); // an even id is the server's
    ResetScanner s = new ResetScanner(100, 0.0, 64);
    assertThat(feed(s, bytes(), 5)).isEqualTo(-1);
    assertThat(s.prematureResets()).isEqualTo(1);
    assertThat(s.streams()).isEqualTo(2);
  }

  @Test
  void bareStreams_keepTheNewest_andFindAnyOfThem() {
    BareStreams b = new BareStreams(4);
    for (int id = 1; id <= 11; id += 2) {
      b.add(id); // 1 and 3 fall out
    }
    assertThat(b.remove(1)).isFalse();
    assertThat(b.remove(7)).isTrue();
    assertThat(b.remove(7)).isFalse();
    assertThat(b.remove(5)).isTrue();
    assertThat(b.size()).isEqualTo(2); // the tombstones at the head are trimmed
    assertThat(b.remove(11)).isTrue();
    assertThat(b.remove(9)).isTrue();
    assertThat(b.size()).isZero();
    assertThatThrownBy(() -> new BareStreams(0)).isInstanceOf(IllegalArgumentException.class);
  }
}
