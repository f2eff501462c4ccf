package io.sluice.bench;

import static io.sluice.bench.PolicyAssistantFigures.MARGIN_MILLIS;
import static io.sluice.bench.PolicyAssistantFigures.counterTable;
import static io.sluice.bench.PolicyAssistantFigures.csv;
import static io.sluice.bench.PolicyAssistantFigures.figures;
import static io.sluice.bench.PolicyAssistantFigures.lostTable;
import static io.sluice.bench.PolicyAssistantFigures.share;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.bench.PolicyAssistantFigures.Figures;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.observability.MetricNames;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The measurement: a policy assistant at its daily peak. Three request classes on one pool:
 * interactive questions (work weight 1, clients send {@code max_tokens} 1024), document answers
 * (about 4× a question's work, 20 % reserved, 10 % of it guaranteed) and evaluation jobs (about 2×,
 * lowest rank, no reserve: idle capacity only). 70 % of the pool is reserved for interactive (50 %
 * guaranteed), interactive deadline 8 s. A warm-up below capacity, then a peak above it. Two runs
 * on the same arrivals: without the degrade ladder (today's queue-or-refuse) and with it
 * (interactive answered concisely, {@code max_tokens} clamped to 256, when it would wait more than
 * 2 s or the pool's free capacity for it is below 20 %).
 *
 * <pre>java -jar bench/target/sluice-bench.jar policy-assistant [--warmup 20] [--seconds 50]
 *     [--load 1.5] [--runs without,with]</pre>
 */
@Command(
    name = "policy-assistant",
    description =
        "Degrade ladder: a policy assistant at its daily peak, interactive questions"
            + " (70 %% reserved, deadline 8 s), document answers and evaluation jobs on one pool"
            + " offered more than it serves; the same arrivals without and with the ladder"
            + " (concise: max_tokens 256): interactive goodput, share served concise, refusals,"
            + " TTFT p95, documents and evaluation goodput, evaluation never ahead of a question.")
final class PolicyAssistant implements Callable<Integer> {
  @Option(
      names = "--warmup",
      defaultValue = "20",
      description =
          "seconds of arrivals below capacity before the peak (the pool learns its service times)"
              + " (default: ${DEFAULT-VALUE})")
  int warmupSeconds = 20;

  @Option(
      names = "--seconds",
      defaultValue = "50",
      description = "seconds of the peak, the measured phase (default: ${DEFAULT-VALUE})")
  int seconds = 50;

  @Option(
      names = "--load",
      defaultValue = "1.5",
      description =
          "offered load at the peak as a multiple of what the upstream's batch slots serve at full"
              + " speed (default: ${DEFAULT-VALUE})")
  double load = 1.5;

  @Option(
      names = "--warmup-load",
      defaultValue = "0.8",
      description = "offered load during the warm-up, same unit (default: ${DEFAULT-VALUE})")
  double warmupLoad = 0.8;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "without,with",
      description =
          "which runs, in order: without (no ladder), with (the ladder) (default:"
              + " ${DEFAULT-VALUE})")
  List<String> runs = List.of("without", "with");

  @Option(
      names = "--seed",
      defaultValue = "18",
      description = "random seed of the arrivals (default: ${DEFAULT-VALUE})")
  long seed = 18;

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-policy-assistant",
      description = "directory for policy-assistant.md (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-policy-assistant");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final String INTERACTIVE = "interactive";
  static final String DOCUMENTS = "documents";
  static final String EVALUATION = "evaluation";

  static final int K = Scenario.UPSTREAM.batchSlots();

  /** Questions: prompts 300–600, answers 150–400 tokens; clients send max_tokens 1024. */
  static final Workload.RequestClass QUESTION =
      Workload.RequestClass.of(
              INTERACTIVE,
              INTERACTIVE,
              "/v1/chat/completions",
              0.75,
              300,
              600,
              150,
              400,
              Duration.ofSeconds(8),
              Duration.ofSeconds(2))
          .withMaxTokens(1024, 1024);

  /** Document answers: prompts 1500–2500, answers 600–1200 (4× a question's tokens). */
  static final Workload.RequestClass DOCUMENT =
      Workload.RequestClass.of(
              DOCUMENTS,
              DOCUMENTS,
              "/v1/chat/completions",
              0.085,
              1500,
              2500,
              600,
              1200,
              Duration.ofSeconds(30),
              Duration.ofSeconds(5))
          .withMaxTokens(2048, 2048);

  /** Evaluation jobs: prompts 800–1200, answers 300–600 (2× a question's tokens). */
  static final Workload.RequestClass EVALUATION_JOB =
      Workload.RequestClass.of(
              EVALUATION,
              EVALUATION,
              "/v1/chat/completions",
              0.165,
              800,
              1200,
              300,
              600,
              Duration.ofSeconds(60),
              Duration.ofSeconds(30))
          .withMaxTokens(600, 600);

  static final List<Workload.RequestClass> CLASSES = List.of(QUESTION, DOCUMENT, EVALUATION_JOB);

  /** Envoy's max_message_timeout and the pool's: above every class's maxQueueWait. */
  static final long HOLD_MILLIS = 10_000;

  /**
   * Completions before a key's learned output reserve is used: the server's default (100) is
   * reached within minutes of a real peak; the bench's warm-up is 20 s, so it learns on fewer and
   * the peak runs on learned reserves, as a long-running pool would.
   */
  static final int LEARNED_WARMUP = 20;

  /** The concise rung's cap on the answer. */
  static final int CONCISE_TOKENS = 256;

  /**
   * The pool's work units: K requests of the mean real size (prompt + answer) of what runs, each
   * class weighted by the slot time it takes, plus 20 % (a KV budget sized for the real answers).
   */
  static long capacity() {
    double slotTime = 0;
    double work = 0;
    for (Workload.RequestClass c : CLASSES) {
      double prompt = (c.promptTokensMin() + c.promptTokensMax()) / 2.0;
      double answer = (c.outputTokensMin() + c.outputTokensMax()) / 2.0;
      double service =
          Scenario.UPSTREAM.prefillPerInputToken().toNanos() / 1e9 * prompt
              + Scenario.UPSTREAM.decodePerOutputToken().toNanos() / 1e9 * answer;
      slotTime += c.share() * service;
      work += c.share() * service * (prompt + answer);
    }
    return Math.round(K * work / slotTime * 1.2);
  }

  static final String LADDER =
      ", degrade: {waitAbove: 2s, headroomBelow: 0.2, ladder: [{concise: {maxOutputTokens: "
          + CONCISE_TOKENS
          + ", instruction: \"Answer in at most three sentences.\"}}]}";

  /** The policy; {@code ladder}: interactive has the degrade ladder. */
  static String policy(boolean ladder) {
    String classes =
        "  interactive: {rank: 0, reservedShare: 0.7, lendableShare: 0.2, borrow: true,"
            + " deadline: 8s, maxQueueWait: 6s, defaultOutputTokens: 1024, maxOutputTokens: 4096"
            + (ladder ? LADDER : "")
            + "}\n"
            + "  documents: {rank: 1, reservedShare: 0.2, lendableShare: 0.1, borrow: true,"
            + " deadline: 30s,"
            + " maxQueueWait: 8s, defaultOutputTokens: 2048, maxOutputTokens: 4096}\n"
            + "  evaluation: {rank: 2, reservedShare: 0.0, borrow: true, deadline: 60s,"
            + " maxQueueWait: 8s, defaultOutputTokens: 600, maxOutputTokens: 4096}\n";
    String base =
        Policies.policy(capacity(), K, HOLD_MILLIS, classes, INTERACTIVE)
            + String.format(
                Locale.ROOT,
                "estimation:%n  learnedReserve: {enabled: true, warmup: %d}%n",
                LEARNED_WARMUP);
    String route = "format: openai-chat}";
    String out = base.replace(route, "format: openai-chat, estimate: body}");
    if (out.equals(base)) {
      throw new IllegalStateException("bench policy changed shape; update PolicyAssistant.policy");
    }
    return out;
  }

  /** Warm-up below capacity, then the peak; the same seed, so the same arrivals in every run. */
  Workload workload() {
    Workload probe =
        Workload.of(
            CLASSES,
            List.of(new Workload.Tenant("t", 1)),
            List.of(new Workload.Phase("p", Duration.ofSeconds(1), 1)),
            0,
            Duration.ZERO,
            Duration.ZERO,
            0,
            Duration.ZERO,
            seed);
    double cap = LoadGenerator.capacityPerSecond(probe, Scenario.UPSTREAM);
    return Workload.of(
        CLASSES,
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1)),
        List.of(
            new Workload.Phase("warm-up", Duration.ofSeconds(warmupSeconds), warmupLoad * cap),
            new Workload.Phase("peak", Duration.ofSeconds(seconds), load * cap)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        2,
        Duration.ofSeconds(20),
        seed);
  }

  @Override
  public Integer call() throws Exception {
    if (warmupSeconds < 1 || seconds < 1 || !(load > 0) || !(warmupLoad > 0)) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this),
          "--warmup/--seconds: at least 1; --load and --warmup-load > 0");
    }
    List<Run> results = run(System.out);
    String md = report(results);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("policy-assistant.md"), md, StandardCharsets.UTF_8);
    for (Run r : results) {
      Files.writeString(
          out.resolve("policy-assistant-" + r.name().replace(' ', '-') + ".csv"),
          csv(r.outcomes()),
          StandardCharsets.UTF_8);
    }
    return 0;
  }

  /**
   * One run: the rig's result, every request's outcome, and the server's ladder counters for
   * interactive ({@code degraded <rung> (<trigger>)}, {@code skipped <rung>: <cause>}).
   */
  record Run(
      String name,
      AdaptiveRuns.Result result,
      List<LoadGenerator.Outcome> outcomes,
      Map<String, Long> ladder) {}

  /** The server's degrade counters of the interactive class. */
  static Map<String, Long> ladderCounters(MeterRegistry registry) {
    Map<String, Long> m = new TreeMap<>();
    for (Counter c : registry.find(MetricNames.DEGRADED).tag("class", INTERACTIVE).counters()) {
      m.merge(
          "degraded " + c.getId().getTag("rung") + " (trigger " + c.getId().getTag("trigger") + ")",
          (long) c.count(),
          Long::sum);
    }
    for (Counter c :
        registry.find(MetricNames.DEGRADE_SKIPPED).tag("class", INTERACTIVE).counters()) {
      m.merge(
          "skipped " + c.getId().getTag("rung") + ": " + c.getId().getTag("cause"),
          (long) c.count(),
          Long::sum);
    }
    return m;
  }

  List<Run> run(PrintStream o) throws Exception {
    Workload w = workload();
    o.printf(
        Locale.ROOT,
        "policy-assistant: simulated LLM, K=%d slots, %s per prompt token, %s per output token;"
            + " questions %.0f %%, documents %.1f %%, evaluation %.1f %% of arrivals; pool %d work"
            + " units, maxRequests %d; %d s at %.2fx then %d s at %.2fx what K serve.%n",
        K,
        Scenario.UPSTREAM.prefillPerInputToken(),
        Scenario.UPSTREAM.decodePerOutputToken(),
        100 * QUESTION.share(),
        100 * DOCUMENT.share(),
        100 * EVALUATION_JOB.share(),
        capacity(),
        K,
        warmupSeconds,
        warmupLoad,
        seconds,
        load);
    List<Run> results = new ArrayList<>();
    for (String n : runs) {
      String run = n.trim();
      boolean ladder = run.equals("with");
      if (!ladder && !run.equals("without")) {
        throw new IllegalArgumentException(
            "--runs: " + n + " (expected: without, with; comma-separated)");
      }
      String name = ladder ? "with the ladder" : "without the ladder";
      o.printf(Locale.ROOT, "%n== run: %s ==%n", name);
      List<LoadGenerator.Outcome> outcomes = Collections.synchronizedList(new ArrayList<>());
      Map<String, Long> ladderCounts = new TreeMap<>();
      AdaptiveRuns.Result r =
          AdaptiveRuns.run(
              name,
              policy(ladder),
              K,
              w,
              Scenario.UPSTREAM,
              HOLD_MILLIS,
              up -> {},
              List.of(),
              warmupSeconds,
              o,
              quiet,
              outcomes::add,
              server -> ladderCounts.putAll(ladderCounters(server.registry())));
      List<LoadGenerator.Outcome> copy;
      synchronized (outcomes) {
        copy = List.copyOf(outcomes);
      }
      results.add(new Run(name, r, copy, ladderCounts));
    }
    return results;
  }

  String report(List<Run> results) {
    if (results.isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "Requests that arrived in the peak (%d s at %.2fx what the %d slots serve, after %d s"
                + " at %.2fx), 2 cores shared. Goodput: answers completed before the client's"
                + " deadline (full or concise) ÷ offered. TTFT from arrival (retry waits"
                + " included). Upstream busy: mean of min(active, K) / K over the peak.%n%n",
            seconds,
            load,
            K,
            warmupSeconds,
            warmupLoad));
    List<Figures> figs = new ArrayList<>();
    for (Run r : results) {
      figs.add(figures(r.outcomes(), 1));
    }
    b.append(
        "| run | interactive goodput | served concise | interactive TTFT p95 | documents goodput"
            + " | evaluation goodput | upstream busy |\n");
    b.append("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < results.size(); i++) {
      Run r = results.get(i);
      Figures f = figs.get(i);
      double end = warmupSeconds + seconds;
      double busy =
          r.result().between(warmupSeconds, end).stream()
              .mapToDouble(s -> Math.min(s.upstreamActive(), K) / (double) K)
              .average()
              .orElse(Double.NaN);
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | **%.1f %%** (%d / %d) | %.1f %% (%d; %d capped at %d at the upstream) | %s |"
                  + " %s | %s | %.0f %% |%n",
              r.name(),
              100 * f.goodput(),
              f.completed(),
              f.offered(),
              f.completed() == 0 ? 0.0 : 100.0 * f.concise() / f.completed(),
              f.concise(),
              f.conciseCapped(),
              CONCISE_TOKENS,
              Tables.ms(f.ttftP95Millis()),
              share(f.documentsCompleted(), f.documentsOffered()),
              share(f.evaluationCompleted(), f.evaluationOffered()),
              100 * busy));
    }
    b.append('\n');
    b.append("Interactive questions of the peak not answered in time, by what happened:\n\n");
    b.append(lostTable(results, figs)).append('\n');
    b.append(
        String.format(
            Locale.ROOT,
            "Evaluation never ahead of a question (whole run). Evaluation jobs that reached the"
                + " upstream while an interactive question was held in Sluice's queue (its"
                + " response's x-sluice-queue-wait-ms before it reached the upstream, or from its"
                + " start to its refusal) from at least %d ms before to %d ms after; else while a"
                + " refused"
                + " question waited out its Retry-After (Sluice holds nothing for it then); and"
                + " questions lost (refused, or past their deadline) during whose life, arrival to"
                + " end, an evaluation job started:%n%n",
            MARGIN_MILLIS,
            MARGIN_MILLIS));
    b.append(
        "| run | evaluation jobs started | while a question was held | while a refused question"
            + " awaited its retry | questions lost while an evaluation job started |\n");
    b.append("|---|---|---|---|---|\n");
    for (int i = 0; i < results.size(); i++) {
      Figures f = figs.get(i);
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | **%d** | %d | %d |%n",
              results.get(i).name(),
              f.evaluationAdmitted(),
              f.evaluationAheadOfWaitingQuestion(),
              f.evaluationAheadOfRetry(),
              f.lostQuestionsWithEvaluationStarted()));
    }
    b.append('\n');
    b.append(
        "The ladder as the server counted it (interactive, whole run; skipped: the rung was tried"
            + " and could not start the request, which then waited, or was refused, as its concise"
            + " version; degraded counts the questions that ran concise, whether at once or after"
            + " waiting):\n\n");
    b.append(counterTable(results)).append('\n');
    List<RunReport> reports = results.stream().map(r -> r.result().report()).toList();
    b.append("Whole run (warm-up and peak), every class:\n\n");
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.ttft(reports)).append('\n');
    b.append(Tables.rejections(reports)).append('\n');
    return b.toString();
  }
}
