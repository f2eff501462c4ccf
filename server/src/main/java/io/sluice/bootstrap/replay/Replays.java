package io.sluice.bootstrap.replay;

import io.sluice.config.SluiceConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A replay run from code (the bench's {@code replay-check} and {@code replay-scale}): the same
 * {@link RecordReader} and {@link Replayer} as {@code sluice replay}, one policy, its figures as a
 * value.
 */
public final class Replays {
  private Replays() {}

  /**
   * What one replay of one policy gave.
   *
   * @param replayed records replayed
   * @param agreement share of requests decided as recorded
   * @param meanWaitErrorMillis mean queue-wait error over requests that waited in either
   * @param recordedGoodput answers the record shows completed within their deadline
   * @param goodput answers the replay completed within their deadline
   * @param classes per {@code pool/class}: {arrivals, recorded goodput, replayed goodput}
   * @param disagreements most frequent {@code recorded -> replayed} pairs and their counts
   * @param late records read after a later one beyond the reorder window
   * @param firstDisagreement the first record decided otherwise ({@code file:line (pair)}), or
   *     empty
   * @param untimed records without {@code timing} (replayed to the millisecond)
   */
  public record Result(
      long replayed,
      double agreement,
      double meanWaitErrorMillis,
      long recordedGoodput,
      long goodput,
      Map<String, long[]> classes,
      Map<String, Long> disagreements,
      long late,
      String firstDisagreement,
      long untimed) {}

  /**
   * Replays {@code records} (oldest first) against {@code policy}, every pool's upstream sharing
   * beyond {@code knee} ({@link Double#POSITIVE_INFINITY}: none).
   *
   * @throws IOException a file cannot be read
   * @throws IllegalArgumentException a record is malformed (its file, line and field)
   */
  public static Result run(List<Path> records, SluiceConfig policy, double knee)
      throws IOException {
    try (RecordReader in = new RecordReader(records, Duration.ofMinutes(15).toMillis(), 1_000_000);
        Replayer r = new Replayer(policy, Map.of(), knee)) {
      r.run(in);
      Map<String, long[]> classes = new TreeMap<>();
      r.recorded
          .rows()
          .forEach(
              (k, row) -> {
                if (k.startsWith("class ")) {
                  Tally.Row mine = r.tally.rows().get(k);
                  classes.put(
                      k.substring("class ".length()),
                      new long[] {row.arrivals, row.goodput, mine == null ? 0 : mine.goodput});
                }
              });
      return new Result(
          r.replayed,
          r.agreement.share(),
          r.agreement.meanWaitErrorMillis(),
          r.recorded.total().goodput,
          r.tally.total().goodput,
          classes,
          Map.copyOf(r.agreement.disagreements),
          in.late(),
          r.agreement.first,
          in.untimed());
    } catch (RecordReader.Malformed e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }
}
