package io.sluice.bootstrap.replay;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.Decision;
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

  private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();

  private final List<Path> files;
  private final long windowMillis;
  private final int maxBuffered;
  private final PriorityQueue<Recorded> buffer =
      new PriorityQueue<>(Comparator.comparingLong(Recorded::arrivalMillis));
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
      Recorded head = buffer.peek();
      if (head != null
          && (buffer.size() >= maxBuffered || head.arrivalMillis() + windowMillis <= newest)) {
        return out(buffer.poll());
      }
      Recorded r = readOne();
      if (r == null) {
        Recorded last = buffer.poll();
        return last == null ? null : out(last);
      }
      newest = Math.max(newest, r.arrivalMillis());
      buffer.add(r);
    }
  }

  private Recorded out(Recorded r) {
    if (r.arrivalMillis() < lastOut) {
      late++;
    }
    lastOut = Math.max(lastOut, r.arrivalMillis());
    return r;
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
        Recorded rec = parse(text.substring(brace), files.get(fileIndex) + ":" + line);
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
    AdmissionRecord.Builder b = AdmissionRecord.newBuilder();
    try {
      PARSER.merge(json, b);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw new Malformed(where, "not a sluice.v1.AdmissionRecord: " + message(e));
    }
    AdmissionRecord r = b.build();
    if (r.getDecision() == Decision.DECISION_ANSWER) {
      return null; // answered by Sluice itself (a job accepted, a status): nothing ran
    }
    if (!r.hasArrivalTime()) {
      throw new Malformed(where, "arrivalTime: missing (expected: an RFC 3339 time)");
    }
    require(where, "pool", r.getPool());
    require(where, "className", r.getClassName());
    if (r.getDecision() == Decision.DECISION_UNSPECIFIED
        || r.getDecision() == Decision.UNRECOGNIZED) {
      throw new Malformed(
          where,
          "decision: "
              + r.getDecision()
              + " (expected: DECISION_ADMIT, _QUEUE, _DEGRADE, _REJECT)");
    }
    if (r.getDeadlineMs() < 0) {
      throw new Malformed(where, "deadlineMs: " + r.getDeadlineMs() + " (expected: >= 0)");
    }
    if (r.getEstimate().getInputTokens() < 0) {
      throw new Malformed(
          where, "estimate.inputTokens: " + r.getEstimate().getInputTokens() + " (expected: >= 0)");
    }
    if (r.hasServiceMs() && r.getServiceMs() < 0) {
      throw new Malformed(where, "serviceMs: " + r.getServiceMs() + " (expected: >= 0)");
    }
    return Recorded.of(r, where);
  }

  private static void require(String where, String field, String value) {
    if (value.isEmpty()) {
      throw new Malformed(where, field + ": missing (expected: a name)");
    }
  }

  private static String message(Exception e) {
    String m = e.getMessage();
    if (m == null) {
      return e.getClass().getSimpleName();
    }
    return m.length() <= 200 ? m : m.substring(0, 200) + "...";
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
