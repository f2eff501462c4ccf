package io.sluice.core.estimate;

import java.util.Arrays;
import java.util.Locale;

/**
 * The server-sent-events framing of {@link UsageExtractor}: splits body chunks into lines across
 * chunk boundaries (LF, CR or CRLF), joins the {@code data:} lines of each event (with LF) and
 * hands each event's data to a {@link Sink} at its blank line or at the end. A line longer than
 * {@link UsageExtractor#MAX_LINE_BYTES} is dropped; so is an event whose joined data would be
 * longer, or that lost part of its data that way. Buffers grow from 1 KiB as lines need. One per
 * response; not thread-safe.
 */
final class SseFramer {
  private static final int MAX = UsageExtractor.MAX_LINE_BYTES;
  private static final byte[] EMPTY = new byte[0];

  /** Receives each complete event's data; the array is the framer's, valid during the call. */
  @FunctionalInterface
  interface Sink {
    void event(byte[] data, int length);
  }

  private final Sink sink;
  private byte[] line = new byte[1024];
  private int lineLength;
  private boolean skippingLine;
  private boolean pendingCr;
  private byte[] event = new byte[1024];
  private int eventLength;
  private boolean eventHasData;
  private boolean eventOverflow;

  SseFramer(Sink sink) {
    this.sink = sink;
  }

  /** The next body chunk. */
  void chunk(byte[] data, int offset, int length) {
    int i = offset;
    int end = offset + length;
    while (i < end) {
      if (pendingCr) {
        pendingCr = false;
        if (data[i] == '\n') {
          i++;
          continue;
        }
      }
      int j = i;
      while (j < end && data[j] != '\n' && data[j] != '\r') {
        j++;
      }
      appendToLine(data, i, j - i);
      if (j == end) {
        return;
      }
      pendingCr = data[j] == '\r';
      endLine();
      i = j + 1;
    }
  }

  /** The end of the body: ends the last line and event, and drops the buffers. */
  void end() {
    if (pendingCr || skippingLine || lineLength > 0) {
      endLine();
    }
    dispatchEvent();
    line = EMPTY;
    event = EMPTY;
  }

  private void appendToLine(byte[] data, int from, int n) {
    if (skippingLine || n == 0) {
      return;
    }
    if (lineLength + n > MAX) {
      if (startsWithData(line, lineLength) || startsWithData(data, from, n, lineLength)) {
        eventOverflow = true; // part of this event's data is lost
      }
      skippingLine = true;
      lineLength = 0;
      return;
    }
    line = ensure(line, lineLength + n);
    System.arraycopy(data, from, line, lineLength, n);
    lineLength += n;
  }

  private void endLine() {
    if (skippingLine) {
      skippingLine = false;
      lineLength = 0;
      return;
    }
    if (lineLength == 0) {
      dispatchEvent();
      return;
    }
    if (startsWithData(line, lineLength)) {
      int from = 5;
      if (lineLength > 5 && line[5] == ' ') {
        from = 6;
      }
      int n = lineLength - from;
      int needed = eventLength + (eventHasData ? 1 : 0) + n;
      if (eventOverflow || needed > MAX) {
        eventOverflow = true;
      } else {
        event = ensure(event, needed);
        if (eventHasData) {
          event[eventLength++] = '\n';
        }
        System.arraycopy(line, from, event, eventLength, n);
        eventLength += n;
      }
      eventHasData = true;
    }
    lineLength = 0;
  }

  private void dispatchEvent() {
    if (eventHasData && !eventOverflow) {
      sink.event(event, eventLength);
    }
    eventHasData = false;
    eventOverflow = false;
    eventLength = 0;
  }

  private static byte[] ensure(byte[] buffer, int capacity) {
    if (capacity <= buffer.length) {
      return buffer;
    }
    int size = Math.min(MAX, Math.max(capacity, buffer.length * 2));
    return Arrays.copyOf(buffer, size);
  }

  private static boolean startsWithData(byte[] b, int length) {
    return length >= 5 && b[0] == 'd' && b[1] == 'a' && b[2] == 't' && b[3] == 'a' && b[4] == ':';
  }

  /** Whether the line whose first {@code lineLength} bytes are buffered plus data starts so. */
  private boolean startsWithData(byte[] data, int from, int n, int lineLength) {
    byte[] prefix = new byte[5];
    int k = 0;
    for (; k < Math.min(5, lineLength); k++) {
      prefix[k] = line[k];
    }
    for (int i = 0; k < 5 && i < n; i++, k++) {
      prefix[k] = data[from + i];
    }
    return startsWithData(prefix, k);
  }

  private static final String EVENT_STREAM = "text/event-stream";

  /**
   * {@code contentType.trim().toLowerCase(Locale.ROOT).startsWith("text/event-stream")}, without
   * the lower-case copy when the type's first 17 characters are ASCII (each then lower-cases alone
   * to one character, as {@code regionMatches} compares them). Most are {@code application/json}: a
   * first character that is ASCII, not trimmed and no case of {@code t} answers no at once
   * (lower-cased alone it is still the first, and not {@code t}); the rest as before.
   */
  static boolean isEventStream(String contentType) {
    char first = contentType.isEmpty() ? ' ' : contentType.charAt(0);
    if (first > ' ' && first < 0x80 && (first | 0x20) != 't') {
      return false;
    }
    String t = contentType.trim();
    int n = EVENT_STREAM.length();
    for (int i = 0, k = Math.min(n, t.length()); i < k; i++) {
      if (t.charAt(i) >= 0x80) {
        return t.toLowerCase(Locale.ROOT).startsWith(EVENT_STREAM);
      }
    }
    return t.length() >= n && t.regionMatches(true, 0, EVENT_STREAM, 0, n);
  }
}
