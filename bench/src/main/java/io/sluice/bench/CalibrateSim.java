package io.sluice.bench;

import io.sluice.calibrate.CalibrateCommand;
import io.sluice.calibrate.Calibrator;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code sluice calibrate} against the simulated provider ({@code SimulatedLlmUpstream}, realistic
 * timings: 0.2 ms per prompt token, 20 ms per output token, {@code --slots} K), served in-process
 * on loopback HTTP; prints the calibration and how far its knee is from K. With {@code
 * --serve-only} it only serves the simulated provider until killed, for running {@code sluice
 * calibrate} (or anything else) against it by hand.
 */
@Command(
    name = "calibrate-sim",
    description = {
      "Run `sluice calibrate` against the simulated provider (K batch slots, realistic timings)"
          + " served on loopback, and compare the knee with K (docs/benchmarks.md, Calibrate).",
      "Arguments after -- go to `sluice calibrate` (e.g. -- --max-concurrency 32).",
      "--serve-only: just serve the simulated provider until killed."
    })
final class CalibrateSim implements Callable<Integer> {
  /** The bench's mix: short answers, so that a run takes about 2 minutes at K = 16. */
  static final String MIX =
      "# calibrate-sim: chat turns and a longer context, short answers (20 ms per output token)\n"
          + "requests:\n"
          + "  - {weight: 3, promptTokens: 300, maxTokens: 32}\n"
          + "  - {weight: 1, promptTokens: 1200, maxTokens: 64}\n";

  @SuppressWarnings("NullAway.Init") // picocli sets it before call()
  @Spec
  CommandSpec spec;

  @Option(
      names = "--slots",
      description = "K, the provider's batch slots (default: ${DEFAULT-VALUE})")
  int slots = 16;

  @Option(
      names = "--ceiling",
      description =
          "answer 429 above this many requests in flight, 0 = no ceiling (default: ${DEFAULT-VALUE})")
  int ceiling;

  @Option(names = "--port", description = "loopback port, 0 = any free (default: ${DEFAULT-VALUE})")
  int port;

  @Option(names = "--serve-only", description = "serve the simulated provider until killed")
  boolean serveOnly;

  @Option(
      names = "--out",
      description = "calibrate's --out, and mix.yaml (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-calibrate-sim");

  @Parameters(paramLabel = "CALIBRATE_ARGS", description = "more `sluice calibrate` options")
  List<String> calibrateArgs = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    PrintWriter o = spec.commandLine().getOut();
    if (slots < 1 || ceiling < 0 || port < 0 || port > 65535) {
      spec.commandLine().getErr().println("--slots >= 1, --ceiling >= 0, --port 0..65535");
      return 2;
    }
    SimulatedLlmUpstream.Settings settings = SimulatedLlmUpstream.Settings.realistic(slots);
    try (SimulatedLlmUpstream llm = SimulatedLlmUpstream.create(settings)) {
      if (ceiling > 0) {
        llm.concurrencyCeiling(ceiling, 429, Duration.ofSeconds(1));
      }
      String url = "http://127.0.0.1:" + llm.serve(port) + "/v1/chat/completions";
      o.printf(
          Locale.ROOT,
          "simulated provider: %s, K=%d, prefill %s ms/prompt token, decode %d ms/output token%s%n",
          url,
          slots,
          settings.prefillPerInputToken().toNanos() / 1e6,
          settings.decodePerOutputToken().toMillis(),
          ceiling > 0 ? ", 429 above " + ceiling + " in flight" : "");
      o.flush();
      if (serveOnly) {
        o.println("serving until killed (Ctrl-C)");
        o.flush();
        new CountDownLatch(1).await();
        return 0;
      }
      Files.createDirectories(out);
      Path mix = out.resolve("mix.yaml");
      Files.writeString(mix, MIX, StandardCharsets.UTF_8);
      List<String> args =
          new ArrayList<>(
              List.of(
                  "--target",
                  url,
                  "--model",
                  "sim",
                  "--mix",
                  mix.toString(),
                  "--requests-per-step",
                  "64",
                  "--step-time",
                  "20s",
                  "--time-limit",
                  "5m",
                  "--out",
                  out.toString()));
      args.addAll(calibrateArgs);
      CalibrateCommand calibrate = new CalibrateCommand();
      CommandLine cl = new CommandLine(calibrate);
      cl.setOverwrittenOptionsAllowed(true); // options after -- win over the defaults above
      cl.setOut(o);
      cl.setErr(spec.commandLine().getErr());
      int exit = cl.execute(args.toArray(new String[0]));
      Calibrator.Result r = calibrate.result();
      if (r != null && r.analysis().kneeConcurrency() > 0) {
        int knee = r.analysis().kneeConcurrency();
        int expected = ceiling > 0 ? Math.min(slots, ceiling) : slots;
        double off = 100.0 * (knee - expected) / expected;
        o.printf(
            Locale.ROOT,
            "%ncalibrate-sim: knee %d vs %s %d: %+.0f %% (%s 15 %%)%n",
            knee,
            ceiling > 0 && ceiling < slots ? "ceiling" : "K",
            expected,
            off,
            Math.abs(off) <= 15 ? "within" : "NOT within");
      }
      return exit;
    }
  }
}
