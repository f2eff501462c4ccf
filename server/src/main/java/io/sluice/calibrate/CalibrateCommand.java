package io.sluice.calibrate;

import io.sluice.config.ConfigException;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sluice calibrate --target URL [options]}: ramps concurrency against an OpenAI-compatible
 * endpoint, prints a table per step, the knee and any ceiling, proposes a pool (static and
 * adaptive), and writes the chart and snippets to {@code --out}. Exit codes: 0 a knee was found, 1
 * the endpoint did not answer usably or no knee was found, 2 a usage error (bad option, bad mix, a
 * non-loopback target without {@code --allow-host}).
 */
@Command(
    name = "calibrate",
    description = {
      "Ramp concurrency against an OpenAI-compatible endpoint (a bounded load test), find the knee",
      "of its throughput curve and any concurrency ceiling (429/503), and propose a pool: the",
      "static one at 80 % of the knee, the adaptive one with the knee as ceiling.",
      "Loopback targets only, unless --allow-host names the target's host. Run it against a",
      "non-production replica: docs/operations.md, \"Calibration runbook\"."
    })
public final class CalibrateCommand implements Callable<Integer> {
  /** Exit code of a usage error (bad option, bad mix file, refused host). */
  public static final int EXIT_USAGE = 2;

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "show this help and exit")
  boolean help;

  @Option(
      names = "--target",
      required = true,
      paramLabel = "URL",
      description = "the endpoint, e.g. http://127.0.0.1:8000/v1/chat/completions")
  String target = "";

  @Option(
      names = "--allow-host",
      paramLabel = "HOST",
      description = "load a non-loopback target: must equal the target's host exactly")
  @Nullable String allowHost;

  @Option(
      names = "--mix",
      paramLabel = "FILE",
      description = "request mix YAML (default: the embedded mix; --print-mix shows it)")
  @Nullable Path mix;

  @Option(names = "--print-mix", description = "print the embedded mix and exit")
  boolean printMix;

  @Option(names = "--model", description = "the request's model field (default: not sent)")
  @Nullable String model;

  @Option(
      names = "--header",
      paramLabel = "'NAME: VALUE'",
      description = "request header, repeatable (values are never printed)")
  List<String> headers = new ArrayList<>();

  @Option(names = "--start", description = "first concurrency (default: ${DEFAULT-VALUE})")
  int start = 1;

  @Option(
      names = "--max-concurrency",
      description = "highest concurrency (default: ${DEFAULT-VALUE})")
  int maxConcurrency = 64;

  @Option(
      names = "--growth",
      description = "factor between coarse steps (default: ${DEFAULT-VALUE})")
  double growth = 2.0;

  @Option(
      names = "--refine",
      description =
          "concurrencies tried inside each interval around the knee and the ceiling after the"
              + " coarse ramp, 0 = none (default: ${DEFAULT-VALUE})")
  int refine = 3;

  @Option(
      names = "--requests-per-step",
      paramLabel = "N",
      description = "request budget of each step (default: ${DEFAULT-VALUE})")
  int requestsPerStep = 100;

  @Option(
      names = "--step-time",
      paramLabel = "DURATION",
      description =
          "a step sends for at most this long; its requests in flight then get as long again"
              + " (default: ${DEFAULT-VALUE})")
  String stepTime = "60s";

  @Option(
      names = "--time-limit",
      paramLabel = "DURATION",
      description =
          "hard limit of the whole run; then the steps so far are the result (default:"
              + " ${DEFAULT-VALUE})")
  String timeLimit = "5m";

  @CommandLine.Mixin ProposalOptions proposal = new ProposalOptions();

  @Option(names = "--seed", description = "seed of the mix draws (default: ${DEFAULT-VALUE})")
  long seed = 1;

  @SuppressWarnings("NullAway.Init") // injected by picocli before call()
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  private Calibrator.@Nullable Result result;

  private static final Pattern DURATION = Pattern.compile("^(\\d+(?:\\.\\d+)?)(ms|s|m|h)$");

  @Override
  public Integer call() throws Exception {
    PrintWriter o = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (printMix) {
      o.print(Mix.embeddedDefaultYaml());
      o.flush();
      return 0;
    }
    Calibrator.Options options;
    try {
      options = options();
    } catch (UsageException e) {
      err.println("sluice calibrate: " + e.getMessage());
      err.flush();
      return EXIT_USAGE;
    }
    Calibrator.Result r = Calibrator.run(options, o);
    result = r;
    return r.exitCode();
  }

  /** What the last {@link #call()} found ({@code null}: it did not run a calibration). */
  public Calibrator.@Nullable Result result() {
    return result;
  }

  /** The checked settings, or a {@link UsageException} naming the first problem. */
  Calibrator.Options options() throws UsageException, IOException {
    String bad = Target.invalidUrl(target);
    if (bad != null) {
      throw new UsageException(bad);
    }
    URI uri = URI.create(target);
    String refusal = Target.refusal(uri, allowHost);
    if (refusal != null) {
      throw new UsageException(refusal);
    }
    List<Target.Header> parsed;
    try {
      parsed = Target.parseHeaders(headers);
    } catch (IllegalArgumentException e) {
      throw new UsageException(String.valueOf(e.getMessage()));
    }
    Mix m;
    if (mix == null) {
      m = Mix.embeddedDefault();
    } else {
      Path file = mix;
      if (!Files.isReadable(file)) {
        throw new UsageException("--mix " + file + ": cannot read file");
      }
      try {
        m = Mix.load(file);
      } catch (ConfigException e) {
        throw new UsageException(
            "--mix "
                + file
                + ": "
                + e.errors().size()
                + " error(s)\n  "
                + String.join("\n  ", e.errors()));
      }
    }
    check(start >= 1, "--start: " + start + " (expected: >= 1)");
    check(
        maxConcurrency >= start && maxConcurrency <= 10_000,
        "--max-concurrency: "
            + maxConcurrency
            + " (expected: "
            + start
            + ".."
            + 10_000
            + ", at least --start)");
    check(growth > 1 && growth <= 16, "--growth: " + growth + " (expected: a number in (1, 16])");
    check(refine >= 0 && refine <= 16, "--refine: " + refine + " (expected: 0..16)");
    check(
        requestsPerStep >= 1 && requestsPerStep <= 1_000_000,
        "--requests-per-step: " + requestsPerStep + " (expected: 1..1000000)");
    Duration step = duration("--step-time", stepTime);
    Duration limit = duration("--time-limit", timeLimit);
    String badProposal = proposal.invalid();
    check(badProposal == null, String.valueOf(badProposal));
    return new Calibrator.Options(
        new Target(uri, parsed),
        model,
        m,
        start,
        maxConcurrency,
        growth,
        refine,
        requestsPerStep,
        step,
        limit,
        proposal.out,
        proposal.names(),
        seed);
  }

  private static void check(boolean ok, String message) throws UsageException {
    if (!ok) {
      throw new UsageException(message);
    }
  }

  /** {@code 250ms}, {@code 2s}, {@code 1.5s}, {@code 5m}, {@code 1h}; greater than zero. */
  static Duration duration(String option, String text) throws UsageException {
    Matcher m = DURATION.matcher(text.trim());
    if (!m.matches()) {
      throw new UsageException(
          option + ": " + text + " (expected: a duration such as 250ms, 2s, 1.5s, 5m, 1h)");
    }
    double n = Double.parseDouble(m.group(1));
    double nanos =
        switch (m.group(2).toLowerCase(Locale.ROOT)) {
          case "ms" -> n * 1e6;
          case "s" -> n * 1e9;
          case "m" -> n * 60e9;
          default -> n * 3600e9;
        };
    if (!(nanos >= 1e6) || nanos > 7 * 24 * 3600e9) {
      throw new UsageException(option + ": " + text + " (expected: 1ms .. 168h)");
    }
    return Duration.ofNanos((long) nanos);
  }

  /** A bad option: printed, exit code 2. */
  static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
