package io.sluice.bootstrap.replay;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.HdrHistogram.Histogram;

/**
 * What one policy did with the replayed requests, per pool, per pool and class, per pool and tenant
 * (at most {@link #MAX_TENANTS} tenants by name, the rest as {@code (other)}): decisions, queue
 * waits, goodput within the deadline and wasted work. Single-threaded.
 */
final class Tally {
  static final int MAX_TENANTS = 50;

  /** One row's counts. */
  static final class Row {
    long arrivals;
    long admitted; // at once or after a wait, degraded included
    long queued; // admitted or refused after a wait in the queue
    long degraded;
    long cancelled;
    long goodput; // completed within the deadline
    long goodputOutputTokens;
    long wastedMillis; // service given to answers cancelled, failed or late
    final Map<String, Long> refused = new TreeMap<>();
    final Histogram waits = new Histogram(3_600_000L, 2); // ms

    long refusedTotal() {
      return refused.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  private final Map<String, Row> rows = new LinkedHashMap<>();
  private final Map<String, Boolean> tenants = new LinkedHashMap<>();

  /** The rows a request of {@code pool}, {@code cls}, {@code tenant} counts in. */
  Row[] rowsOf(String pool, String cls, String tenant) {
    String t = tenants.containsKey(tenant) || tenants.size() < MAX_TENANTS ? tenant : "(other)";
    tenants.putIfAbsent(t, Boolean.TRUE);
    return new Row[] {
      row("pool " + pool), row("class " + pool + "/" + cls), row("tenant " + pool + "/" + t)
    };
  }

  private Row row(String key) {
    return rows.computeIfAbsent(key, k -> new Row());
  }

  Map<String, Row> rows() {
    return rows;
  }

  /** The total over every pool. */
  Row total() {
    Row t = new Row();
    rows.forEach(
        (k, r) -> {
          if (k.startsWith("pool ")) {
            t.arrivals += r.arrivals;
            t.admitted += r.admitted;
            t.queued += r.queued;
            t.degraded += r.degraded;
            t.cancelled += r.cancelled;
            t.goodput += r.goodput;
            t.goodputOutputTokens += r.goodputOutputTokens;
            t.wastedMillis += r.wastedMillis;
            r.refused.forEach((why, n) -> t.refused.merge(why, n, Long::sum));
            t.waits.add(r.waits);
          }
        });
    return t;
  }

  static void arrived(Row[] rows) {
    for (Row r : rows) {
      r.arrivals++;
    }
  }

  /** A decision ({@link Verdict}) and the time waited for it. */
  static void decided(Row[] rows, String verdict, long waitMillis, boolean waited) {
    for (Row r : rows) {
      if (Verdict.refused(verdict)) {
        r.refused.merge(verdict.substring(Verdict.REFUSE.length()), 1L, Long::sum);
      } else {
        r.admitted++;
        if (verdict.startsWith(Verdict.DEGRADE)) {
          r.degraded++;
        }
      }
      if (waited) {
        r.queued++;
        r.waits.recordValue(Math.min(3_600_000L, Math.max(0, waitMillis)));
      }
    }
  }

  /** An admitted request's end: goodput or wasted service. */
  static void ended(
      Row[] rows, boolean good, long outputTokens, long serviceMillis, boolean cancel) {
    for (Row r : rows) {
      if (good) {
        r.goodput++;
        r.goodputOutputTokens += Math.max(0, outputTokens);
      } else {
        r.wastedMillis += serviceMillis;
      }
      if (cancel) {
        r.cancelled++;
      }
    }
  }
}
