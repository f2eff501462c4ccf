package io.sluice.calibrate;

import java.util.List;
import java.util.Locale;

/** The printed step table and number formats. */
final class Report {
  private Report() {}

  static final String HEADER =
      String.format(
          Locale.ROOT,
          "%6s %6s %6s %-14s %6s %9s %11s %10s %10s %10s",
          "conc",
          "sent",
          "ok",
          "errors",
          "unfin",
          "req/s",
          "out tok/s",
          "TTFT p50",
          "TTFT p95",
          "mean lat");

  /** One table row; {@code mark} is appended (e.g. {@code <- knee}). */
  static String row(StepResult s, String mark) {
    return String.format(
            Locale.ROOT,
            "%6d %6d %6d %-14s %6d %9.2f %11.1f %10s %10s %10s",
            s.concurrency(),
            s.sent(),
            s.ok(),
            s.errorsText(),
            s.unfinished(),
            s.requestsPerSecond(),
            s.outputTokensPerSecond(),
            millis(s.ttftP50Millis()),
            millis(s.ttftP95Millis()),
            millis(s.meanLatencyMillis()))
        + (mark.isEmpty() ? "" : "  " + mark);
  }

  /** The table of every step by concurrency, the knee and the ceiling marked. */
  static String table(Knee.Analysis a) {
    StringBuilder b = new StringBuilder(HEADER).append('\n');
    List<StepResult> steps = a.steps();
    for (StepResult s : steps) {
      String mark = "";
      if (s == a.knee()) {
        mark = "<- knee";
      } else if (a.ceiling() > 0 && s.concurrency() == a.ceiling()) {
        mark = "<- ceiling (429/503)";
      } else if (s == a.cutStep()) {
        mark = "<- past the knee (" + a.cut().name().toLowerCase(Locale.ROOT) + ")";
      }
      b.append(row(s, mark)).append('\n');
    }
    return b.toString();
  }

  /** {@code 12 ms}, {@code 1.24 s}, or {@code -} for NaN. */
  static String millis(double ms) {
    if (Double.isNaN(ms)) {
      return "-";
    }
    if (ms < 10) {
      return String.format(Locale.ROOT, "%.1f ms", ms);
    }
    if (ms < 1000) {
      return String.format(Locale.ROOT, "%.0f ms", ms);
    }
    return String.format(Locale.ROOT, "%.2f s", ms / 1000);
  }

  /** {@code 2}, {@code 2.5}: no trailing zeros. */
  static String number(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    return String.format(Locale.ROOT, "%s", v);
  }
}
