package io.sluice.bench;

import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code reserve} bench: clients send {@code max_tokens} 2048–4096 for answers of 100–300
 * tokens, against a pool whose capacity in work units is sized for the real answers (and whose
 * {@code maxRequests} is the model server's batch slots). Three runs on the same arrivals: the
 * static reserve (the client's cap), the learned reserve, and an oracle whose clients send the
 * answer's own length as {@code max_tokens}.
 *
 * <pre>java -jar bench/target/sluice-bench.jar reserve [--warmup 30] [--seconds 30] [--load 1.2]
 * </pre>
 */
@Command(
    name = "reserve",
    description =
        "Learned output reserve: max_tokens 2048-4096 for answers of 100-300 tokens,"
            + " capacity sized for the real answers; static reserve vs learned vs an oracle that"
            + " knows each answer's length: goodput, upstream busy, TTFT p95, refusals, peak"
            + " upstream concurrency.")
final class Reserve implements Callable<Integer> {
  @Option(
      names = "--warmup",
      defaultValue = "30",
      description =
          "seconds of arrivals before the measured phase (the learned reserve warms up on the"
              + " first completions) (default: ${DEFAULT-VALUE})")
  int warmupSeconds = 30;

  @Option(
      names = "--seconds",
      defaultValue = "30",
      description = "seconds of the measured phase (default: ${DEFAULT-VALUE})")
  int seconds = 30;

  @Option(
      names = "--load",
      defaultValue = "1.2",
      description =
          "offered load as a multiple of what the upstream's batch slots serve at full speed"
              + " (default: ${DEFAULT-VALUE})")
  double load = 1.2;

  @Option(
      names = "--quantile",
      defaultValue = "0.9",
      description = "the class's reserveQuantile in the learned run (default: ${DEFAULT-VALUE})")
  double quantile = 0.9;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "static,learned,oracle",
      description = "which runs, in order (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of("static", "learned", "oracle");

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-reserve",
      description = "directory for the markdown tables (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-reserve");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final int PROMPT_MIN = 200;
  static final int PROMPT_MAX = 400;
  static final int ANSWER_MIN = 100;
  static final int ANSWER_MAX = 300;
  static final int CAP_MIN = 2048;
  static final int CAP_MAX = 4096;
  static final int K = Scenario.UPSTREAM.batchSlots();

  /** The pool's work units: K requests of the mean real size (prompt + answer), 20 % slack. */
  static final long CAPACITY =
      Math.round(K * ((PROMPT_MIN + PROMPT_MAX) / 2.0 + (ANSWER_MIN + ANSWER_MAX) / 2.0) * 1.2);

  static final long HOLD_MILLIS = 10_000;

  /**
   * Completions before a key's learned reserve is used. The server's default (100) is reached in a
   * minute or two of real traffic; the static reserve admits about one request a second here, so
   * the bench warms up on fewer to keep the run short.
   */
  static final int WARMUP_COMPLETIONS = 20;

  @Override
  public Integer call() throws Exception {
    if (warmupSeconds < 1 || seconds < 1 || !(load > 0) || !(quantile > 0 && quantile < 1)) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this),
          "--warmup/--seconds: at least 1; --load > 0; --quantile in (0, 1)");
    }
    List<AdaptiveRuns.Result> results = run(System.out);
    String md = report(results);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("reserve.md"), md, StandardCharsets.UTF_8);
    return 0;
  }

  /** The chat class; {@code oracle}: clients send the answer's length as max_tokens. */
  static Workload.RequestClass chat(boolean oracle) {
    Workload.RequestClass c =
        Workload.RequestClass.of(
            "interactive",
            "interactive",
            "/v1/chat/completions",
            1.0,
            PROMPT_MIN,
            PROMPT_MAX,
            ANSWER_MIN,
            ANSWER_MAX,
            Duration.ofSeconds(20),
            Duration.ofSeconds(2));
    return oracle
        ? c.withMaxTokens(Workload.RequestClass.ORACLE, Workload.RequestClass.ORACLE)
        : c.withMaxTokens(CAP_MIN, CAP_MAX);
  }

  /** Warm-up then measured phase at the same rate; the same seed, so the same arrivals. */
  Workload workload(boolean oracle) {
    Workload.RequestClass c = chat(oracle);
    double service =
        Scenario.UPSTREAM.prefillPerInputToken().toNanos() / 1e9 * (PROMPT_MIN + PROMPT_MAX) / 2
            + Scenario.UPSTREAM.decodePerOutputToken().toNanos()
                / 1e9
                * (ANSWER_MIN + ANSWER_MAX)
                / 2;
    double rate = load * K / service;
    return Workload.of(
        List.of(c),
        List.of(new Workload.Tenant("acme", 1), new Workload.Tenant("globex", 1)),
        List.of(
            new Workload.Phase("warm-up", Duration.ofSeconds(warmupSeconds), rate),
            new Workload.Phase("measured", Duration.ofSeconds(seconds), rate)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        0,
        Duration.ofSeconds(25),
        17);
  }

  /** The policy: one class, the pool sized for the real answers, the learned reserve on or off. */
  String policy(boolean learned) {
    String classes =
        String.format(
            Locale.ROOT,
            "  interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 20s,"
                + " maxQueueWait: 8s, defaultOutputTokens: 256, maxOutputTokens: 4096,"
                + " reserveQuantile: %s}%n",
            quantile);
    String base = Policies.policy(CAPACITY, K, HOLD_MILLIS, classes, "interactive");
    String estimation =
        String.format(
            Locale.ROOT,
            "estimation:%n  learnedReserve: {enabled: %s, warmup: %d}%n",
            learned,
            WARMUP_COMPLETIONS);
    return base + estimation;
  }

  List<AdaptiveRuns.Result> run(PrintStream o) throws Exception {
    o.printf(
        Locale.ROOT,
        "reserve: simulated LLM, K=%d slots, %s per prompt token, %s per output token; prompts"
            + " %d-%d, answers %d-%d tokens, max_tokens %d-%d (oracle: the answer's length);"
            + " pool capacity %d work units (K x mean real size x 1.2), maxRequests %d; offered"
            + " %.2fx what K serve; %d s warm-up + %d s measured.%n",
        K,
        Scenario.UPSTREAM.prefillPerInputToken(),
        Scenario.UPSTREAM.decodePerOutputToken(),
        PROMPT_MIN,
        PROMPT_MAX,
        ANSWER_MIN,
        ANSWER_MAX,
        CAP_MIN,
        CAP_MAX,
        CAPACITY,
        K,
        load,
        warmupSeconds,
        seconds);
    List<AdaptiveRuns.Result> results = new ArrayList<>();
    for (String n : runs) {
      String run = n.trim();
      boolean oracle = run.equals("oracle");
      boolean learned = run.equals("learned");
      if (!oracle && !learned && !run.equals("static")) {
        throw new IllegalArgumentException(
            "--runs: " + n + " (expected: static, learned, oracle; comma-separated)");
      }
      String name =
          learned
              ? "learned reserve (q " + quantile + ")"
              : oracle ? "oracle (max_tokens = answer)" : "static reserve (max_tokens)";
      o.printf(Locale.ROOT, "%n== run: %s ==%n", name);
      results.add(
          AdaptiveRuns.run(
              name,
              policy(learned),
              K,
              workload(oracle),
              Scenario.UPSTREAM,
              HOLD_MILLIS,
              up -> {},
              List.of(),
              warmupSeconds,
              o,
              quiet));
    }
    return results;
  }

  String report(List<AdaptiveRuns.Result> results) {
    if (results.isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "Measured phase (%d s after %d s of warm-up), 2 cores shared. Upstream busy: mean"
                + " of min(active, K) / K over the measured phase (100 ms samples).%n%n",
            seconds,
            warmupSeconds));
    AdaptiveRuns.Result oracle =
        results.stream().filter(r -> r.name().startsWith("oracle")).findFirst().orElse(null);
    AdaptiveRuns.Result stat =
        results.stream().filter(r -> r.name().startsWith("static")).findFirst().orElse(null);
    b.append(
        "| run | goodput/s (measured) | vs oracle | vs static | upstream busy | peak upstream"
            + " concurrency | TTFT p95 | refused | missed deadline |\n");
    b.append("|---|---|---|---|---|---|---|---|---|\n");
    for (AdaptiveRuns.Result r : results) {
      RunReport rep = r.report();
      double good = measuredGoodput(r);
      double end = warmupSeconds + seconds;
      double busy =
          r.between(warmupSeconds, end).stream()
              .mapToDouble(s -> Math.min(s.upstreamActive(), K) / (double) K)
              .average()
              .orElse(Double.NaN);
      int peak =
          r.between(warmupSeconds, end).stream()
              .mapToInt(AdaptiveRuns.Sample::upstreamActive)
              .max()
              .orElse(0);
      long refused = rep.refusals().byReason().values().stream().mapToLong(Long::longValue).sum();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %.2f | %s | %s | %.0f %% | %d | %.0f ms | %d | %d |%n",
              r.name(),
              good,
              ratio(good, oracle),
              ratio(good, stat),
              100 * busy,
              peak,
              rep.ttft().millis("interactive", 95),
              refused,
              rep.outcomes().deadlineMissed()));
    }
    b.append('\n');
    List<RunReport> reports = results.stream().map(AdaptiveRuns.Result::report).toList();
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.ttft(reports)).append('\n');
    b.append(Tables.rejections(reports)).append('\n');
    return b.toString();
  }

  private static double measuredGoodput(AdaptiveRuns.Result r) {
    List<RunReport.PhaseRow> ph = r.report().byPhase();
    return ph.size() > 1 ? ph.get(1).goodputPerSecond() : r.report().goodputPerSecond();
  }

  private static String ratio(double good, AdaptiveRuns.@Nullable Result base) {
    if (base == null) {
      return "n/a";
    }
    double g = measuredGoodput(base);
    return g > 0 ? String.format(Locale.ROOT, "%.2fx", good / g) : "n/a";
  }
}
