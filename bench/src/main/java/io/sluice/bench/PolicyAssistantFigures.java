package io.sluice.bench;

import static io.sluice.bench.PolicyAssistant.CONCISE_TOKENS;
import static io.sluice.bench.PolicyAssistant.DOCUMENTS;
import static io.sluice.bench.PolicyAssistant.EVALUATION;
import static io.sluice.bench.PolicyAssistant.INTERACTIVE;

import io.sluice.bench.PolicyAssistant.Run;
import io.sluice.harness.LoadGenerator;
import io.sluice.upstream.UpstreamRequest;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The policy-assistant bench's figures, read from every request's outcome: goodput by class,
 * answers made concise, questions held while an evaluation started, and the tables of the report.
 */
final class PolicyAssistantFigures {
  private PolicyAssistantFigures() {}

  /** One row per request, in order of arrival (times in ms since the run started). */
  static String csv(List<LoadGenerator.Outcome> outcomes) {
    StringBuilder b =
        new StringBuilder(
            "class,tenant,phase,arrival,upstream,end,ending,detail,attempts,ttft,answer,"
                + "degraded,upstream_max_tokens\n");
    outcomes.stream()
        .sorted(java.util.Comparator.comparingLong(LoadGenerator.Outcome::arrivalMillis))
        .forEach(
            o ->
                b.append(
                        String.join(
                            ",",
                            o.requestClass(),
                            o.tenant(),
                            Integer.toString(o.phase()),
                            Long.toString(o.arrivalMillis()),
                            Long.toString(o.upstreamMillis()),
                            Long.toString(o.endMillis()),
                            o.ending(),
                            o.detail().replace(',', ';'),
                            Integer.toString(o.attempts()),
                            Long.toString(o.ttftFromArrivalMillis()),
                            Integer.toString(o.outputTokens()),
                            o.header("x-sluice-degraded").orElse(""),
                            Integer.toString(upstreamMaxTokens(o))))
                    .append('\n'));
    return b.toString();
  }

  /** What one run measured over the requests that arrived in the peak. */
  record Figures(
      long offered,
      long completed,
      long concise,
      long conciseCapped,
      double ttftP95Millis,
      long documentsOffered,
      long documentsCompleted,
      long evaluationOffered,
      long evaluationCompleted,
      Map<String, Long> interactiveLost,
      long evaluationAheadOfWaitingQuestion,
      long evaluationAheadOfRetry,
      long lostQuestionsWithEvaluationStarted,
      long evaluationAdmitted) {

    double goodput() {
      return offered == 0 ? Double.NaN : (double) completed / offered;
    }
  }

  private static final Pattern MAX_TOKENS =
      Pattern.compile("\"(?:max_tokens|max_completion_tokens|max_output_tokens)\"\\s*:\\s*(\\d+)");

  /** The max_tokens the upstream received, or -1. */
  static int upstreamMaxTokens(LoadGenerator.Outcome o) {
    if (o.upstreamRequest().isEmpty()) {
      return -1;
    }
    UpstreamRequest r = o.upstreamRequest().get();
    Matcher m = MAX_TOKENS.matcher(r.bodyUtf8());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  static boolean concise(LoadGenerator.Outcome o) {
    return o.header("x-sluice-degraded").map(v -> v.equals("concise")).orElse(false);
  }

  /** Margin around an evaluation's start within which a question's wait does not count. */
  static final long MARGIN_MILLIS = 100;

  static Figures figures(List<LoadGenerator.Outcome> all, int peakPhase) {
    List<LoadGenerator.Outcome> peak = all.stream().filter(o -> o.phase() == peakPhase).toList();
    List<LoadGenerator.Outcome> questions =
        peak.stream().filter(o -> o.requestClass().equals(INTERACTIVE)).toList();
    long completed = questions.stream().filter(LoadGenerator.Outcome::completed).count();
    long concise =
        questions.stream()
            .filter(LoadGenerator.Outcome::completed)
            .filter(PolicyAssistantFigures::concise)
            .count();
    long capped =
        questions.stream()
            .filter(LoadGenerator.Outcome::completed)
            .filter(PolicyAssistantFigures::concise)
            .filter(o -> upstreamMaxTokens(o) > 0 && upstreamMaxTokens(o) <= CONCISE_TOKENS)
            .count();
    long[] ttft =
        questions.stream()
            .filter(LoadGenerator.Outcome::completed)
            .mapToLong(LoadGenerator.Outcome::ttftFromArrivalMillis)
            .sorted()
            .toArray();
    double p95 =
        ttft.length == 0
            ? Double.NaN
            : ttft[Math.max(0, Math.min(ttft.length - 1, (int) Math.ceil(0.95 * ttft.length) - 1))];
    Map<String, Long> lost = new TreeMap<>();
    for (LoadGenerator.Outcome o : questions) {
      if (!o.completed()) {
        String key =
            switch (o.ending()) {
              case "refused" -> "refused: " + o.detail();
              case "deadline" ->
                  o.detail().equals("mid")
                      ? "deadline missed mid-answer"
                      : "deadline missed before the answer";
              default -> o.ending() + (o.detail().isEmpty() ? "" : ": " + o.detail());
            };
        lost.merge(key, 1L, Long::sum);
      }
    }
    // displacement, over the whole run: an evaluation job started while a question waited
    List<LoadGenerator.Outcome> evalStarts =
        all.stream()
            .filter(o -> o.requestClass().equals(EVALUATION) && o.upstreamMillis() >= 0)
            .toList();
    List<LoadGenerator.Outcome> allQuestions =
        all.stream().filter(o -> o.requestClass().equals(INTERACTIVE)).toList();
    long ahead = 0;
    long aheadOfRetry = 0;
    for (LoadGenerator.Outcome e : evalStarts) {
      long t = e.upstreamMillis();
      if (allQuestions.stream().anyMatch(q -> heldAt(q, t))) {
        ahead++;
      } else if (allQuestions.stream().anyMatch(q -> awaitingRetryAt(q, t))) {
        aheadOfRetry++;
      }
    }
    long lostWithEval = 0;
    for (LoadGenerator.Outcome q : allQuestions) {
      if (q.completed()) {
        continue;
      }
      for (LoadGenerator.Outcome e : evalStarts) {
        if (e.upstreamMillis() >= q.arrivalMillis() && e.upstreamMillis() <= q.endMillis()) {
          lostWithEval++;
          break;
        }
      }
    }
    return new Figures(
        questions.size(),
        completed,
        concise,
        capped,
        p95,
        count(peak, DOCUMENTS, false),
        count(peak, DOCUMENTS, true),
        count(peak, EVALUATION, false),
        count(peak, EVALUATION, true),
        lost,
        ahead,
        aheadOfRetry,
        lostWithEval,
        evalStarts.size());
  }

  /**
   * One of {@code q}'s attempts was held in Sluice's queue from at least {@link #MARGIN_MILLIS}
   * before {@code t} to at least as long after it: an attempt that reached the upstream was held
   * for the {@code x-sluice-queue-wait-ms} its response reports (none: it started at once), up to
   * its arrival at the upstream; one that did not was held from its start to its answer.
   */
  static boolean heldAt(LoadGenerator.Outcome q, long t) {
    List<LoadGenerator.Try> tries = q.tries();
    for (int i = 0; i < tries.size(); i++) {
      LoadGenerator.Try a = tries.get(i);
      long from = a.startMillis();
      long to = a.endMillis();
      if (a.admittedMillis() >= 0) {
        long waited =
            i == tries.size() - 1
                ? q.header("x-sluice-queue-wait-ms").map(Long::parseLong).orElse(0L)
                : a.admittedMillis() - a.startMillis();
        from = a.admittedMillis() - waited;
        to = a.admittedMillis();
      }
      if (from <= t - MARGIN_MILLIS && to >= t + MARGIN_MILLIS) {
        return true;
      }
    }
    return false;
  }

  /**
   * {@code q} had been refused and was waiting to retry (its Retry-After) from at least {@link
   * #MARGIN_MILLIS} before {@code t} to at least as long after it: Sluice holds nothing for it
   * then.
   */
  static boolean awaitingRetryAt(LoadGenerator.Outcome q, long t) {
    List<LoadGenerator.Try> tries = q.tries();
    for (int i = 0; i < tries.size(); i++) {
      LoadGenerator.Try a = tries.get(i);
      if (a.admittedMillis() >= 0) {
        return false;
      }
      long next = i + 1 < tries.size() ? tries.get(i + 1).startMillis() : q.endMillis();
      if (a.endMillis() <= t - MARGIN_MILLIS && next >= t + MARGIN_MILLIS) {
        return true;
      }
    }
    return false;
  }

  private static long count(List<LoadGenerator.Outcome> l, String cls, boolean completed) {
    return l.stream()
        .filter(o -> o.requestClass().equals(cls))
        .filter(o -> !completed || o.completed())
        .count();
  }

  static String counterTable(List<Run> results) {
    return keyedTable("counter", results, results.stream().map(Run::ladder).toList());
  }

  static String lostTable(List<Run> results, List<Figures> figs) {
    return keyedTable(
        "what happened", results, figs.stream().map(Figures::interactiveLost).toList());
  }

  /** One row per key of any column, one column per run (a missing key counts 0). */
  private static String keyedTable(
      String first, List<Run> results, List<Map<String, Long>> columns) {
    TreeMap<String, Boolean> keys = new TreeMap<>();
    columns.forEach(c -> c.keySet().forEach(k -> keys.put(k, true)));
    StringBuilder b = new StringBuilder("| ").append(first).append(" |");
    results.forEach(r -> b.append(' ').append(r.name()).append(" |"));
    b.append("\n|---|");
    results.forEach(r -> b.append("---|"));
    b.append('\n');
    if (keys.isEmpty()) {
      b.append("| (none) |");
      results.forEach(r -> b.append(" 0 |"));
      b.append('\n');
    }
    for (String k : keys.keySet()) {
      b.append("| ").append(k).append(" |");
      for (Map<String, Long> c : columns) {
        b.append(' ').append(c.getOrDefault(k, 0L)).append(" |");
      }
      b.append('\n');
    }
    return b.toString();
  }

  static String share(long completed, long offered) {
    return offered == 0
        ? "n/a"
        : String.format(
            Locale.ROOT, "%.1f %% (%d / %d)", 100.0 * completed / offered, completed, offered);
  }
}
