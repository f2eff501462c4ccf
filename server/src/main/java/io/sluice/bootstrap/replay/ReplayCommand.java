package io.sluice.bootstrap.replay;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sluice replay --records FILES --policy CANDIDATE.yaml [--baseline CURRENT.yaml]}: replays
 * recorded decisions against a candidate policy (and a baseline) through the real admission core on
 * a virtual clock, and reports per pool, class and tenant (docs/replay.md). Exit codes: 0 done, 1 a
 * record is malformed or a file cannot be read, 2 a usage error (bad option, invalid policy).
 */
@Command(
    name = "replay",
    description = {
      "Replay decision records (the decision log's JSON lines, decisionLog.file) against a",
      "candidate policy, and a baseline, through the real admission core on a virtual clock;",
      "report admitted, queued, degraded, refused, goodput within deadline and wasted work per",
      "pool, class and tenant, side by side, with the agreement of each replay with the record.",
      "docs/replay.md says what a replay cannot know."
    })
public final class ReplayCommand implements Callable<Integer> {
  public static final int EXIT_BAD_RECORDS = 1;
  public static final int EXIT_USAGE = 2;
  private static final Pattern KNEE = Pattern.compile("knee: (\\d+) concurrent");

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "show this help and exit")
  boolean help;

  @Option(
      names = "--records",
      required = true,
      split = ",",
      paramLabel = "FILE",
      description = "record files, oldest first (comma-separated or repeated)")
  List<Path> records = new ArrayList<>();

  @Option(names = "--policy", required = true, paramLabel = "CANDIDATE.yaml")
  Path policy = Path.of("");

  @Option(
      names = "--baseline",
      paramLabel = "CURRENT.yaml",
      description = "the policy the records were taken under (its replay gives the agreement)")
  @Nullable Path baseline;

  @Option(names = "--out", paramLabel = "DIR", description = "default: ${DEFAULT-VALUE}")
  Path out = Path.of("target", "sluice-replay");

  @Option(
      names = "--knee",
      paramLabel = "N|POOL=N",
      split = ",",
      description =
          "concurrency beyond which a pool's upstream shares its throughput (default: none)")
  List<String> knee = new ArrayList<>();

  @Option(
      names = "--knee-from",
      paramLabel = "FILE",
      description = "read the knee from a calibrate output (pool-static.yaml, pool-adaptive.yaml)")
  @Nullable Path kneeFrom;

  @Option(
      names = "--reorder-window",
      description =
          "how late a record may be written after its arrival (default: ${DEFAULT-VALUE})")
  Duration window = Duration.ofMinutes(15);

  @Option(
      names = "--max-buffered",
      description = "records held to reorder (default: ${DEFAULT-VALUE})")
  int maxBuffered = 1_000_000;

  @Override
  public Integer call() throws Exception {
    PrintWriter o =
        new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    return run(o);
  }

  int run(PrintWriter o) throws IOException {
    Map<String, Double> knees = new HashMap<>();
    double defaultKnee = Double.POSITIVE_INFINITY;
    try {
      for (String k : knee) {
        int eq = k.indexOf('=');
        double v = Double.parseDouble(k.substring(eq + 1).trim());
        if (!(v >= 1)) {
          throw new NumberFormatException("below 1");
        }
        if (eq < 0) {
          defaultKnee = v;
        } else {
          knees.put(k.substring(0, eq).trim(), v);
        }
      }
      if (kneeFrom != null) {
        Matcher m = KNEE.matcher(Files.readString(kneeFrom));
        if (!m.find()) {
          o.println("--knee-from: " + kneeFrom + " names no knee (expected a calibrate output)");
          return EXIT_USAGE;
        }
        defaultKnee = Double.parseDouble(m.group(1));
      }
    } catch (NumberFormatException e) {
      o.println("--knee: " + knee + " (expected: N or POOL=N, N >= 1)");
      return EXIT_USAGE;
    }
    List<ReplayReport.Run> runs = new ArrayList<>();
    try {
      SluiceConfig candidate = ConfigLoader.load(policy);
      SluiceConfig base = baseline == null ? null : ConfigLoader.load(baseline);
      long started = System.nanoTime();
      Replayer first = replay(base != null ? base : candidate, knees, defaultKnee, o);
      runs.add(new ReplayReport.Run("recorded", first.recorded, first.agreement));
      if (base != null) {
        runs.add(new ReplayReport.Run("baseline", first.tally, first.agreement));
        Replayer second = replay(candidate, knees, defaultKnee, o);
        runs.add(new ReplayReport.Run("candidate", second.tally, second.agreement));
      } else {
        runs.add(new ReplayReport.Run("candidate", first.tally, first.agreement));
      }
      o.printf(
          java.util.Locale.ROOT,
          "replayed %d records per policy in %.1f s%n",
          first.replayed,
          (System.nanoTime() - started) / 1e9);
    } catch (ConfigException e) {
      o.println("policy: " + String.join("; ", e.errors()));
      return EXIT_USAGE;
    } catch (RecordReader.Malformed | java.io.UncheckedIOException e) {
      o.println("records: " + e.getMessage());
      return EXIT_BAD_RECORDS;
    }
    o.print(ReplayReport.table(runs));
    for (ReplayReport.Run r : runs.subList(1, runs.size())) {
      o.println(ReplayReport.agreement(r.agreement(), r.name()));
    }
    Files.createDirectories(out);
    o.println("wrote " + ReplayReport.json(runs, out.resolve("replay.json")));
    try {
      o.println("wrote " + ReplayReport.chart(runs, out.resolve("replay.png")));
    } catch (IOException | RuntimeException | LinkageError | InternalError e) {
      o.println("chart: not written (" + e + ")");
    }
    o.flush();
    return 0;
  }

  private Replayer replay(
      SluiceConfig config, Map<String, Double> knees, double defaultKnee, PrintWriter o)
      throws IOException {
    try (RecordReader in = new RecordReader(records, window.toMillis(), maxBuffered);
        Replayer r = new Replayer(config, knees, defaultKnee)) {
      r.run(in);
      if (in.late() > 0 || in.skipped() > 0) {
        o.printf(
            java.util.Locale.ROOT,
            "records: %d read, %d lines skipped, %d later than --reorder-window%n",
            in.read(),
            in.skipped(),
            in.late());
      }
      if (r.retriesNotSent > 0 || r.retriesDrawn > 0) {
        o.printf(
            java.util.Locale.ROOT,
            "records: %d retries not sent (their client's attempt admitted, or retried when the"
                + " replay refused it); %d retries of the replay's own refusals%n",
            r.retriesNotSent,
            r.retriesDrawn);
      }
      if (in.untimed() > 0) {
        o.printf(
            java.util.Locale.ROOT,
            "records: %d of %d without timing (written before it): ordered and timed to the"
                + " millisecond, a lower fidelity (docs/replay.md, \"Records\")%n",
            in.untimed(),
            in.read());
      }
      return r;
    }
  }

  /** Runs the command on its own (tests, tools). */
  public static int execute(String... args) {
    return new CommandLine(new ReplayCommand()).execute(args);
  }
}
