package io.sluice.bootstrap.replay;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import org.jspecify.annotations.Nullable;

/**
 * Streams decision records from JSON-lines files (as the decision log writes them: one {@code
 * sluice.v1.AdmissionRecord} a line in proto3 JSON, after any logger prefix before its first
 * opening brace), in arrival order. The log writes an admitted request when it ends, so lines are
 * not in arrival order: a bounded reorder buffer holds records until one arrived {@code
 * windowMillis} after them was read (or the buffer holds {@code maxBuffered}); a record older than
 * the last one handed out is counted ({@link #late}) and handed out at once. Memory: the buffer,
 * never the file.
 *
 * <p>A malformed line stops the read with a {@link Malformed}: its file and line, the field and
 * what was expected. Blank lines and lines without an opening brace (other log lines) are skipped
 * and counted; so are records that ran nothing upstream and need no pool ({@code DECISION_ANSWER}).
 */
final class RecordReader implements AutoCloseable {
  /** A record the replay cannot read: names the file, the line and the field. */
  static final class Malformed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Malformed(String where, String message) {
      super(where + ": " + message);
    }
  }

  /** A record read, with its place in the files (ties of arrival keep the files' order). */
  private record Buffered(Recorded record, long seq) {}

  /** Within this of its whole millisecond, a record's anchored clock time stands (else: anew). */
  private static final long ANCHOR_SLACK_NANOS = 2_000_000L;

  private final List<Path> files;
  private final long windowMillis;
  private final int maxBuffered;
  private final PriorityQueue<Buffered> buffer =
      new PriorityQueue<>(
          Comparator.comparingLong((Buffered b) -> b.record().arrivalNanos())
              .thenComparingLong(Buffered::seq));
  private final RecordJson json = new RecordJson();
  private long anchor = Long.MIN_VALUE; // epoch nanoseconds less the writer's clock tick
  private long anchors;
  private long untimed;
  private int fileIndex = -1;
  private @Nullable BufferedReader in;
  private long line;
  private long newest = Long.MIN_VALUE;
  private long lastOut = Long.MIN_VALUE;
  private long read;
  private long skipped;
  private long late;

  RecordReader(List<Path> files, long windowMillis, int maxBuffered) {
    this.files = List.copyOf(files);
    this.windowMillis = windowMillis;
    this.maxBuffered = Math.max(1, maxBuffered);
  }

  /** The next record in arrival order, or null after the last. */
  @Nullable Recorded next() {
    while (true) {
      Buffered head = buffer.peek();
      if (head != null
          && (buffer.size() >= maxBuffered
              || head.record().arrivalMillis() + windowMillis <= newest)) {
        return out(buffer.poll().record());
      }
      Recorded r = readOne();
      if (r == null) {
        Buffered last = buffer.poll();
        return last == null ? null : out(last.record());
      }
      newest = Math.max(newest, r.arrivalMillis());
      buffer.add(new Buffered(anchored(r), read));
    }
  }

  private Recorded out(Recorded r) {
    if (r.arrivalNanos() < lastOut) {
      late++;
    }
    lastOut = Math.max(lastOut, r.arrivalNanos());
    return r;
  }

  /**
   * {@code r} with its exact arrival: its writer's clock tick plus the anchor, the offset of the
   * first record's tick to its whole millisecond (so within a millisecond of the truth, the same
   * for every record of one process: their order and spacing are exact). A record whose anchored
   * time falls more than {@link #ANCHOR_SLACK_NANOS} from its own millisecond (another process, a
   * stepped wall clock) anchors anew.
   */
  private Recorded anchored(Recorded r) {
    Recorded.Timing t = r.timing();
    if (t == null) {
      untimed++;
      return r;
    }
    long ms = r.arrivalMillis() * 1_000_000L;
    long at = t.tickNs() + anchor;
    if (anchor == Long.MIN_VALUE || Math.abs(at - ms) > ANCHOR_SLACK_NANOS) {
      anchor = ms - t.tickNs();
      anchors++;
      at = ms;
    }
    return r.anchored(at);
  }

  /** Records without {@code timing} (written before it): replayed to the millisecond. */
  long untimed() {
    return untimed;
  }

  /** How many times the records' clock was anchored to their wall-clock times (1: one process). */
  long anchors() {
    return anchors;
  }

  /** Records read, lines skipped, records handed out after a later one. */
  long read() {
    return read;
  }

  long skipped() {
    return skipped;
  }

  long late() {
    return late;
  }

  private @Nullable Recorded readOne() {
    try {
      while (true) {
        BufferedReader r = in;
        if (r == null) {
          if (++fileIndex >= files.size()) {
            return null;
          }
          r = Files.newBufferedReader(files.get(fileIndex), StandardCharsets.UTF_8);
          in = r;
          line = 0;
        }
        String text = r.readLine();
        if (text == null) {
          r.close();
          in = null;
          continue;
        }
        line++;
        int brace = text.indexOf('{');
        if (brace < 0) {
          skipped++;
          continue;
        }
        Recorded rec =
            json.parse(
                brace == 0 ? text : text.substring(brace), files.get(fileIndex) + ":" + line);
        if (rec == null) {
          skipped++;
          continue;
        }
        read++;
        return rec;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The record of one JSON line, null when it is one a replay skips; malformed: thrown. */
  static @Nullable Recorded parse(String json, String where) {
    return new RecordJson().parse(json, where);
  }

  @Override
  public void close() throws IOException {
    BufferedReader r = in;
    in = null;
    if (r != null) {
      r.close();
    }
  }
}
