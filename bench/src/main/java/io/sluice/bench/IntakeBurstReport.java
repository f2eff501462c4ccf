package io.sluice.bench;

import io.sluice.bench.IntakeBurst.Run;
import io.sluice.bench.IntakeBurst.Submitted;
import io.sluice.harness.LoopbackRelay;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** The intake-burst bench's figures, verdicts and Markdown table. */
final class IntakeBurstReport {
  private IntakeBurstReport() {}

  /** The {@code q} quantile (0..1) of {@code v} (NaN when empty), nearest rank. */
  static double quantile(double[] v, double q) {
    if (v.length == 0) {
      return Double.NaN;
    }
    double[] s = v.clone();
    Arrays.sort(s);
    int i = (int) Math.ceil(q * s.length) - 1;
    return s[Math.max(0, Math.min(s.length - 1, i))];
  }

  /** Where one job started against its predicted window. */
  record Start(
      double sentSeconds,
      double actualSeconds,
      long afterSeconds,
      long beforeSeconds,
      boolean open,
      double error) {
    boolean inside() {
      return error == 0;
    }
  }

  /**
   * The window error of one job: 0 inside {@code [start_after, start_before + 1)} (the window is in
   * whole epoch seconds), else seconds early (negative) or late (positive). A window is "open" when
   * it runs to the job's expiry (no learned rate yet).
   */
  static Start start(Submitted s, LoopbackRelay.Job j) {
    double actual = j.firstDispatchMillis.get() / 1000.0;
    double error;
    if (actual < s.startAfter) {
      error = actual - s.startAfter;
    } else if (actual >= s.startBefore + 1) {
      error = actual - (s.startBefore + 1);
    } else {
      error = 0;
    }
    return new Start(
        s.sentMillis / 1000.0,
        actual,
        s.startAfter,
        s.startBefore,
        s.startBefore >= s.expiresAt,
        error);
  }

  static List<Start> starts(Run r) {
    List<Start> out = new ArrayList<>();
    for (Submitted s : r.submitted()) {
      LoopbackRelay.Job j = s.id.isEmpty() ? null : r.relayed().get(s.id);
      if (j != null && j.firstDispatchMillis.get() > 0 && s.startAfter >= 0) {
        out.add(start(s, j));
      }
    }
    return out;
  }

  /**
   * One line per accepted job: when it was sent, its position and work ahead, its predicted window
   * and its actual start (epoch seconds from the first job sent), and its error (0 inside).
   */
  static String perJob(Run r) {
    StringBuilder csv =
        new StringBuilder(
            "job,sent_s,position,ahead_work,start_after_s,start_before_s,actual_s,error_s\n");
    long t0 = r.submitted().stream().mapToLong(s -> s.sentMillis).min().orElse(0);
    for (Submitted s : r.submitted()) {
      LoopbackRelay.Job j = s.id.isEmpty() ? null : r.relayed().get(s.id);
      if (j == null || j.firstDispatchMillis.get() <= 0 || s.startAfter < 0) {
        continue;
      }
      Start st = start(s, j);
      csv.append(
          String.format(
              Locale.ROOT,
              "%d,%.3f,%d,%d,%.1f,%.1f,%.3f,%.3f%n",
              s.index,
              (s.sentMillis - t0) / 1000.0,
              s.position,
              s.aheadWork,
              s.startAfter - t0 / 1000.0,
              s.startBefore - t0 / 1000.0,
              st.actualSeconds() - t0 / 1000.0,
              st.error()));
    }
    return csv.toString();
  }

  /** Writes {@code md} as intake-burst.md and {@link #perJob} as intake-burst-jobs.csv. */
  static void write(Path out, String md, Run with) throws IOException {
    Files.writeString(out.resolve("intake-burst.md"), md, StandardCharsets.UTF_8);
    Files.writeString(out.resolve("intake-burst-jobs.csv"), perJob(with), StandardCharsets.UTF_8);
  }

  static long accepted(Run r) {
    return r.submitted().stream().filter(s -> !s.id.isEmpty()).count();
  }

  /** Late mode: requests the pool admitted at once (they ran then; no id). */
  static long admittedAtOnce(Run r) {
    return r.submitted().stream()
        .filter(s -> s.id.isEmpty() && s.status == 200 && !s.reason.equals("accepted"))
        .count();
  }

  static double answerP99Millis(Run r) {
    return quantile(
            r.submitted().stream()
                .filter(s -> s.answerMicros >= 0)
                .mapToDouble(s -> s.answerMicros)
                .toArray(),
            0.99)
        / 1000.0;
  }

  static Map<String, Long> finals(Run r) {
    Map<String, Long> m = new TreeMap<>();
    for (Submitted s : r.submitted()) {
      String k =
          !s.id.isEmpty()
              ? s.finalStatus
              : s.status == 200
                  ? "ran at once"
                  : "not accepted (" + s.status + " " + s.reason + ")";
      m.merge(k.isEmpty() ? "unread" : k, 1L, Long::sum);
    }
    return m;
  }

  static long runTwice(Run r) {
    return r.relayed().values().stream().filter(j -> j.upstreamCalls.get() > 1).count();
  }

  static long neverRan(Run r) {
    return r.submitted().stream()
        .filter(s -> !s.id.isEmpty())
        .filter(
            s -> {
              LoopbackRelay.Job j = r.relayed().get(s.id);
              return j == null || j.upstreamCalls.get() == 0;
            })
        .count();
  }

  static double goodputRatio(Run without, Run with) {
    long base = without.interactive().outcomes().completed();
    return base == 0 ? Double.NaN : (double) with.interactive().outcomes().completed() / base;
  }

  static List<Verdict> verdicts(Run without, Run with, int jobs) {
    List<Verdict> v = new ArrayList<>();
    long acc = accepted(with);
    long ran = with.late() ? admittedAtOnce(with) : 0;
    v.add(
        new Verdict(
            with.late()
                ? "every late request ran at once or got an id (none refused)"
                : "every background request got an id at once",
            String.format(
                Locale.ROOT,
                "%d of %d accepted, %d admitted at once, answer p99 %.1f ms",
                acc,
                jobs,
                ran,
                answerP99Millis(with)),
            acc + ran == jobs));
    double g = goodputRatio(without, with);
    v.add(
        new Verdict(
            "interactive goodput with the burst >= 0.98 of without",
            String.format(
                Locale.ROOT,
                "%d / %d = %.3f",
                with.interactive().outcomes().completed(),
                without.interactive().outcomes().completed(),
                g),
            g >= 0.98));
    long completed = finals(with).getOrDefault("completed", 0L);
    long ended = with.submitted().stream().filter(s -> IntakeBurst.ended(s.finalStatus)).count();
    v.add(
        new Verdict(
            "every accepted job ends completed (0 lost)",
            completed
                + " of "
                + acc
                + " completed, "
                + (acc - ended)
                + " not ended; final statuses "
                + finals(with),
            completed == acc && acc + ran == jobs));
    long twice = runTwice(with);
    v.add(
        new Verdict(
            "0 jobs run twice (upstream calls per job id)",
            twice + " run twice, " + neverRan(with) + " never reached the upstream",
            twice == 0));
    List<Start> st = starts(with);
    long inside = st.stream().filter(Start::inside).count();
    v.add(
        new Verdict(
            "every job started within its predicted window",
            String.format(Locale.ROOT, "%d of %d inside", inside, st.size()),
            inside == st.size() && st.size() == acc));
    return v;
  }

  static String report(Run without, Run with, int jobs) {
    StringBuilder md = new StringBuilder();
    md.append("### intake-burst\n\n");
    md.append(
        "| run | interactive offered | completed (goodput) | refused | deadline missed |"
            + " unfinished | TTFT p50 / p95 ms |\n");
    md.append("|---|---|---|---|---|---|---|\n");
    for (Run r : List.of(without, with)) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d | %d | %d | %d | %.0f / %.0f |%n",
              r.name(),
              r.interactive().outcomes().offered(),
              r.interactive().outcomes().completed(),
              r.interactive().outcomes().rejectedFinalTotal(),
              r.interactive().outcomes().deadlineMissed(),
              r.interactive().outcomes().unfinished(),
              r.interactive().ttft().millis("interactive", 50),
              r.interactive().ttft().millis("interactive", 95)));
    }
    List<Start> st = starts(with);
    double[] abs = st.stream().mapToDouble(s -> Math.abs(s.error())).toArray();
    double[] late = st.stream().filter(s -> s.error() > 0).mapToDouble(Start::error).toArray();
    long early = st.stream().filter(s -> s.error() < 0).count();
    long open = st.stream().filter(Start::open).count();
    long first = with.submitted().stream().mapToLong(s -> s.sentMillis).min().orElse(0) / 1000;
    double[] width =
        st.stream()
            .filter(s -> !s.open())
            .mapToDouble(s -> s.beforeSeconds() - s.afterSeconds())
            .toArray();
    md.append('\n');
    md.append(
        with.late()
            ? "| late burst, no background: true (fresh replicas, from second one) | value |\n"
            : "| background burst (fresh replicas, burst from second one) | value |\n");
    md.append("|---|---|\n");
    row(md, "offered", jobs + String.format(Locale.ROOT, " at %.1f/s", 0.0 + rate(with)));
    row(
        md,
        "accepted with an id at once",
        String.format(
            Locale.ROOT,
            "%d (answer p50 %.1f ms, p99 %.1f ms)",
            accepted(with),
            quantile(
                    with.submitted().stream()
                        .filter(s -> s.answerMicros >= 0)
                        .mapToDouble(s -> s.answerMicros)
                        .toArray(),
                    0.5)
                / 1000.0,
            answerP99Millis(with)));
    if (with.late()) {
      row(md, "admitted at once (ran then, no id)", Long.toString(admittedAtOnce(with)));
    }
    row(md, "final statuses (status route)", finals(with).toString());
    row(md, "run twice (upstream calls per id > 1)", Long.toString(runTwice(with)));
    row(md, "never reached the upstream", Long.toString(neverRan(with)));
    row(md, "dispatches without a marker", Long.toString(with.relayUnmarked()));
    row(
        md,
        "dispatches per job (> 1: returned or reclaimed)",
        Long.toString(
            with.relayed().values().stream().filter(j -> j.dispatches.get() > 1).count()));
    row(
        md,
        "last job answered, s after the first was sent",
        String.format(Locale.ROOT, "%.1f", with.lastEndSeconds()));
    row(
        md,
        "started inside the predicted window",
        String.format(Locale.ROOT, "%d of %d", st.size() - early - late.length, st.size()));
    row(md, "started early / late", early + " / " + late.length);
    row(
        md,
        "window error |s| (0 inside): median / p90 / max",
        String.format(
            Locale.ROOT,
            "%.1f / %.1f / %.1f",
            quantile(abs, 0.5),
            quantile(abs, 0.9),
            quantile(abs, 1.0)));
    row(
        md,
        "late by, s: median / p90",
        String.format(Locale.ROOT, "%.1f / %.1f", quantile(late, 0.5), quantile(late, 0.9)));
    row(md, "open windows [now, expiry] (no learned rate yet)", open + " of " + st.size());
    row(
        md,
        "width of the other windows, s: median / p90",
        String.format(Locale.ROOT, "%.0f / %.0f", quantile(width, 0.5), quantile(width, 0.9)));
    md.append('\n').append(timeline(st, first)).append('\n');
    for (Verdict v : verdicts(without, with, jobs)) {
      md.append("- ").append(v.line()).append('\n');
    }
    return md.toString();
  }

  private static double rate(Run r) {
    List<Submitted> s = r.submitted();
    if (s.size() < 2) {
      return 0;
    }
    double span = (s.get(s.size() - 1).sentMillis - s.get(0).sentMillis) / 1000.0;
    return span <= 0 ? 0 : (s.size() - 1) / span;
  }

  /** Per 5 s of submission: jobs, their median predicted window and actual start (s from t0). */
  static String timeline(List<Start> st, long t0) {
    StringBuilder md = new StringBuilder();
    md.append(
        "| accepted at (s) | jobs | open windows | median start_after | median start_before |"
            + " median actual start | inside |\n");
    md.append("|---|---|---|---|---|---|---|\n");
    Map<Long, List<Start>> by = new TreeMap<>();
    for (Start s : st) {
      by.computeIfAbsent(Math.max(0, (long) (s.sentSeconds() - t0) / 5 * 5), k -> new ArrayList<>())
          .add(s);
    }
    for (var e : by.entrySet()) {
      List<Start> l = e.getValue();
      md.append(
          String.format(
              Locale.ROOT,
              "| %d–%d | %d | %d | %.0f | %.0f | %.1f | %d |%n",
              e.getKey(),
              e.getKey() + 5,
              l.size(),
              l.stream().filter(Start::open).count(),
              quantile(l.stream().mapToDouble(s -> s.afterSeconds() - t0).toArray(), 0.5),
              quantile(l.stream().mapToDouble(s -> s.beforeSeconds() - t0).toArray(), 0.5),
              quantile(l.stream().mapToDouble(s -> s.actualSeconds() - t0).toArray(), 0.5),
              l.stream().filter(Start::inside).count()));
    }
    return md.toString();
  }

  private static void row(StringBuilder md, String k, String v) {
    md.append("| ").append(k).append(" | ").append(v).append(" |\n");
  }
}
