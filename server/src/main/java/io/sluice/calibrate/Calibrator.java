package io.sluice.calibrate;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * One calibration run: a warm-up request, the {@link Ramp}, the {@link Knee} analysis, the {@link
 * Proposal}, the table on {@code out}, and the chart, snippets and a CSV of the steps in the output
 * directory. {@code sluice calibrate} ({@link CalibrateCommand}) is its command line.
 */
public final class Calibrator {
  private Calibrator() {}

  /** Exit code: a knee was found (also with partial results after the time limit). */
  public static final int EXIT_OK = 0;

  /** Exit code: the endpoint did not answer usably, or no step gave a knee. */
  public static final int EXIT_NO_KNEE = 1;

  /**
   * A run's settings (checked by {@link CalibrateCommand}).
   *
   * @param target URL and headers (already allowed by {@link Target#refusal})
   * @param model the request's {@code model} ({@code null}: not sent)
   * @param mix request shapes
   * @param start first concurrency
   * @param maxConcurrency highest concurrency
   * @param growth factor between coarse steps
   * @param refine points per refinement interval
   * @param requestsPerStep request budget of each step
   * @param stepTime how long a step sends (in-flight requests get as long again)
   * @param timeLimit hard limit of the whole run
   * @param out directory for the chart, the snippets and steps.csv
   * @param names pool and class names, weights
   * @param seed of the mix draws
   */
  public record Options(
      Target target,
      @Nullable String model,
      Mix mix,
      int start,
      int maxConcurrency,
      double growth,
      int refine,
      int requestsPerStep,
      Duration stepTime,
      Duration timeLimit,
      Path out,
      Proposal.Names names,
      long seed) {}

  /**
   * What a run found.
   *
   * @param analysis the steps, the knee, the ceiling
   * @param proposal the pool proposed ({@code null}: no knee)
   * @param timeUp whether the time limit ended the run
   * @param stoppedBy why the ramp stopped
   * @param files what was written to the output directory
   * @param exitCode {@link #EXIT_OK} or {@link #EXIT_NO_KNEE}
   */
  public record Result(
      Knee.Analysis analysis,
      @Nullable Proposal proposal,
      boolean timeUp,
      String stoppedBy,
      List<Path> files,
      int exitCode) {}

  /** Runs; prints to {@code out} as it goes. */
  public static Result run(Options o, PrintWriter out) throws InterruptedException, IOException {
    long startNanos = System.nanoTime();
    long deadline = startNanos + o.timeLimit().toNanos();
    String where = shown(o.target());
    out.println("sluice calibrate: " + where + (o.model() == null ? "" : ", model " + o.model()));
    if (!o.target().headers().isEmpty()) {
      List<String> names = new ArrayList<>();
      o.target().headers().forEach(h -> names.add(h.name()));
      out.println("  headers: " + String.join(", ", names) + " (values not shown)");
    }
    out.println("  mix: " + o.mix().describe());
    out.printf(
        Locale.ROOT,
        "  steps: from %d, x%s up to %d, then %d refinement points per interval; at most %d"
            + " requests and %s per step; time limit %s%n",
        o.start(),
        Report.number(o.growth()),
        o.maxConcurrency(),
        o.refine(),
        o.requestsPerStep(),
        seconds(o.stepTime()),
        seconds(o.timeLimit()));
    out.flush();
    Files.createDirectories(o.out());
    StepRunner.Settings settings =
        new StepRunner.Settings(
            o.target(), o.model(), o.mix(), o.requestsPerStep(), o.stepTime(), o.seed());
    Ramp.Outcome outcome;
    try (StepRunner runner = new StepRunner(settings)) {
      Duration probeTime =
          Duration.ofNanos(Math.min(2 * o.stepTime().toNanos(), deadline - System.nanoTime()));
      StepRunner.Probe probe = runner.probe(probeTime);
      if (!probe.ok()) {
        out.println(
            "first request: "
                + StepRunner.describe(probe)
                + "\nsluice calibrate: the endpoint did not answer the first request with a"
                + " stream; check --target, --model and --header (nothing measured)");
        out.flush();
        Knee.Analysis none = Knee.analyse(List.of());
        return new Result(none, null, false, "first request failed", List.of(), EXIT_NO_KNEE);
      }
      out.println(
          "first request: ok (TTFT " + Report.millis(probe.ttftMillis()) + ", not counted)\n");
      out.println(Report.HEADER);
      out.flush();
      outcome =
          Ramp.run(
              new Ramp.Schedule(o.start(), o.maxConcurrency(), o.growth(), o.refine()),
              c -> runner.run(c, deadline),
              () -> System.nanoTime() >= deadline,
              s -> {
                out.println(Report.row(s, ""));
                out.flush();
              });
    }
    Knee.Analysis a = outcome.analysis();
    out.println();
    out.println("by concurrency:");
    out.print(Report.table(a));
    out.println(a.kneeLine());
    out.println(a.ceilingLine());
    out.println(
        "ramp: stopped by "
            + outcome.stoppedBy()
            + (outcome.timeUp()
                ? " (time limit " + seconds(o.timeLimit()) + " reached: partial results)"
                : "")
            + String.format(Locale.ROOT, "; %.1f s", (System.nanoTime() - startNanos) / 1e9));
    List<Path> files = new ArrayList<>();
    Proposal proposal = null;
    if (a.knee() != null) {
      double measured = measuredPrompt(a);
      double scale = Double.isNaN(measured) ? 1.0 : measured / o.mix().meanPromptTokens();
      String header =
          "# sluice calibrate "
              + Instant.now().truncatedTo(ChronoUnit.SECONDS)
              + ": "
              + where
              + (o.model() == null ? "" : ", model " + o.model())
              + "\n# "
              + a.kneeLine()
              + "\n# "
              + a.ceilingLine()
              + "\n";
      proposal = Proposal.of(a, o.mix(), scale, o.names(), header);
      out.println();
      out.println("proposed pool, static " + validates(proposal.staticYaml()) + ":");
      out.print(proposal.staticYaml());
      out.println();
      out.println(
          "alternative, adaptive (the knee as the ceiling, a quarter of it as the floor) "
              + validates(proposal.adaptiveYaml())
              + ":");
      out.print(proposal.adaptiveYaml());
      files.add(write(o.out().resolve("pool-static.yaml"), proposal.staticYaml()));
      files.add(write(o.out().resolve("pool-adaptive.yaml"), proposal.adaptiveYaml()));
    } else {
      out.println("no pool proposed: no knee");
    }
    files.add(write(o.out().resolve("steps.csv"), csv(a)));
    try {
      files.add(Chart.write(a, "sluice calibrate " + where, o.out().resolve("calibrate.png")));
    } catch (IOException | RuntimeException | LinkageError | InternalError e) {
      // e.g. a JRE without fonts: the table and snippets stand on their own
      out.println("chart: not written (" + e + ")");
    }
    out.println();
    files.forEach(f -> out.println("wrote " + f));
    out.flush();
    return new Result(
        a,
        proposal,
        outcome.timeUp(),
        outcome.stoppedBy(),
        List.copyOf(files),
        proposal == null ? EXIT_NO_KNEE : EXIT_OK);
  }

  /** Mean prompt tokens the endpoint reported over the eligible steps (NaN: it reported none). */
  static double measuredPrompt(Knee.Analysis a) {
    double sum = 0;
    int n = 0;
    for (StepResult s : a.eligible()) {
      if (!Double.isNaN(s.meanPromptTokens())) {
        sum += s.meanPromptTokens() * s.ok();
        n += s.ok();
      }
    }
    return n == 0 ? Double.NaN : sum / n;
  }

  /** scheme://host:port/path: no query (it may hold a key). */
  static String shown(Target t) {
    java.net.URI u = t.uri();
    return u.getScheme()
        + "://"
        + u.getHost()
        + (u.getPort() < 0 ? "" : ":" + u.getPort())
        + (u.getRawPath() == null ? "" : u.getRawPath())
        + (u.getRawQuery() == null ? "" : "?(query not shown)");
  }

  /** Whether {@code yaml} is a policy the loader accepts, said for the printout. */
  private static String validates(String yaml) {
    try {
      ConfigLoader.parse(yaml);
      return "(a complete policy: `sluice validate` accepts it)";
    } catch (ConfigException e) {
      return "(does NOT validate: " + String.join("; ", e.errors()) + ")";
    }
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  private static Path write(Path file, String text) throws IOException {
    Files.writeString(file, text, StandardCharsets.UTF_8);
    return file;
  }

  static String csv(Knee.Analysis a) {
    StringBuilder b =
        new StringBuilder(
            "concurrency,sent,ok,errors,unfinished,requests_per_s,output_tokens_per_s,ttft_p50_ms,"
                + "ttft_p95_ms,mean_latency_ms,mean_prompt_tokens,mean_output_tokens,duration_ms,mark\n");
    for (StepResult s : a.steps()) {
      String mark = s == a.knee() ? "knee" : a.ceiling() == s.concurrency() ? "ceiling" : "";
      b.append(
          String.format(
              Locale.ROOT,
              "%d,%d,%d,%s,%d,%.3f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%s%n",
              s.concurrency(),
              s.sent(),
              s.ok(),
              s.errorsText().equals("-") ? "" : s.errorsText(),
              s.unfinished(),
              s.requestsPerSecond(),
              s.outputTokensPerSecond(),
              s.ttftP50Millis(),
              s.ttftP95Millis(),
              s.meanLatencyMillis(),
              s.meanPromptTokens(),
              s.meanOutputTokens(),
              s.durationMillis(),
              mark));
    }
    return b.toString();
  }
}
