package io.sluice.rls;

import io.sluice.core.store.TokenBucketResult;
import io.sluice.rls.RlsDecision.Code;
import io.sluice.rls.RlsDecision.Decided;
import io.sluice.rls.RlsDecision.Header;
import io.sluice.rls.RlsDecision.Status;
import io.sluice.rls.RlsMetrics.LimitCounters;
import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RlsSettings;
import java.util.ArrayList;
import java.util.List;

/**
 * From the store's answers to the call's decision, as envoyproxy/ratelimit decides it: each limit's
 * outcome (fixed-window counter or token bucket, shadow mode, the hit counters of the reference's
 * stats), each descriptor's status (the first denying limit, else the one with least left), the
 * overall code (quota mode, global shadow mode) and the response headers. No store and no clock
 * here: the evaluator asks the store and hands the answers in.
 */
final class RlsOutcomes {
  /** One limit of one descriptor to count: its cache key and the call's weight for it. */
  record Slot(int descriptor, LimitSpec limit, String key, long hits) {}

  /** A limit's outcome: its code, what is left, seconds until its window resets. */
  record SlotResult(Slot slot, Code code, long remaining, long resetSeconds) {}

  private final RlsSettings settings;
  private final RlsMetrics metrics;

  RlsOutcomes(RlsSettings settings, RlsMetrics metrics) {
    this.settings = settings;
    this.metrics = metrics;
  }

  static long resetSeconds(LimitSpec l, long nowSeconds) {
    long w = l.windowSeconds();
    return w - Math.floorMod(nowSeconds, w);
  }

  SlotResult fixedWindow(Slot s, long after, long limit, long nowSeconds, String domain) {
    LimitSpec l = s.limit();
    long w = s.hits();
    long before = after - w;
    long near = (long) Math.floor(limit * settings.nearLimitRatio());
    LimitCounters c = metrics.limit(domain, l.statKey());
    c.totalHits().increment(w);
    long reset = resetSeconds(l, nowSeconds);
    if (after > limit) {
      if (before >= limit) {
        c.overLimit().increment(w);
      } else {
        c.overLimit().increment(after - limit);
        c.nearLimit().increment(limit - Math.max(near, before));
      }
      if (l.shadowMode()) {
        c.shadowMode().increment(w);
        return new SlotResult(s, Code.OK, 0, reset);
      }
      return new SlotResult(s, Code.OVER_LIMIT, 0, reset);
    }
    if (after > near) {
      c.nearLimit().increment(before >= near ? w : after - near);
    }
    c.withinLimit().increment(w);
    return new SlotResult(s, Code.OK, limit - after, reset);
  }

  SlotResult tokenBucket(Slot s, TokenBucketResult r, String domain) {
    if (r.granted()) {
      return count(
          s,
          Code.OK,
          (long) Math.floor(Math.max(0, r.tokens())),
          ceilSeconds(r.fullAfterMillis()),
          domain);
    }
    return count(s, Code.OVER_LIMIT, 0, Math.max(1, ceilSeconds(r.retryAfterMillis())), domain);
  }

  private static long ceilSeconds(long millis) {
    return Math.floorDiv(millis + 999, 1000);
  }

  /** Counts an outcome that did not come from a fixed-window counter. */
  SlotResult count(Slot s, Code code, long remaining, long reset, String domain) {
    LimitCounters c = metrics.limit(domain, s.limit().statKey());
    c.totalHits().increment(s.hits());
    if (code == Code.OVER_LIMIT) {
      c.overLimit().increment(s.hits());
      if (s.limit().shadowMode()) {
        c.shadowMode().increment(s.hits());
        return new SlotResult(s, Code.OK, 0, reset);
      }
    } else {
      c.withinLimit().increment(s.hits());
    }
    return new SlotResult(s, code, remaining, reset);
  }

  RlsDecision decide(int n, boolean[] unlimited, List<SlotResult> results) {
    // Several limits on one descriptor: the first denying one, else the one with least left.
    SlotResult[] chosen = new SlotResult[n];
    for (int k = 0; k < results.size(); k++) {
      SlotResult r = results.get(k);
      int i = r.slot().descriptor();
      chosen[i] = chosen[i] == null ? r : preferred(chosen[i], r);
    }
    Status[] chosenStatuses = new Status[n];
    for (int i = 0; i < n; i++) {
      SlotResult c = chosen[i];
      chosenStatuses[i] =
          c == null
              ? (unlimited[i] ? Status.UNLIMITED : Status.NO_LIMIT)
              : new Status(
                  c.code(),
                  c.slot().limit(),
                  Math.min(c.remaining(), RlsDecision.UNLIMITED_REMAINING),
                  c.resetSeconds());
    }
    List<Status> statuses = n == 1 ? List.of(chosenStatuses[0]) : List.of(chosenStatuses);

    boolean over = false;
    int quotaCount = 0;
    int quotaOver = 0;
    for (Status s : statuses) {
      boolean quota =
          s.currentLimit() != null && (s.currentLimit().quotaMode() || settings.quotaMode());
      if (quota) {
        quotaCount++;
        if (s.code() == Code.OVER_LIMIT) {
          quotaOver++;
        }
      } else if (s.code() == Code.OVER_LIMIT) {
        over = true;
      }
    }
    if (quotaCount > 0 && quotaOver == quotaCount) {
      over = true;
    }
    if (over && settings.shadowMode()) {
      metrics.globalShadowMode();
      over = false;
    }
    Code overall = over ? Code.OVER_LIMIT : Code.OK;
    Decided decided = new Decided(overall, statuses, headers(overall, statuses));
    metrics.call(over ? "over_limit" : "ok");
    return decided;
  }

  /**
   * Of two limits of one descriptor, the one its status reports: the first denying one in limit
   * order, else the one with least left (the first of them in limit order).
   */
  private static SlotResult preferred(SlotResult a, SlotResult b) {
    boolean aOver = a.code() == Code.OVER_LIMIT;
    boolean bOver = b.code() == Code.OVER_LIMIT;
    if (aOver != bOver) {
      return aOver ? a : b;
    }
    if (!aOver && a.remaining() != b.remaining()) {
      return a.remaining() < b.remaining() ? a : b;
    }
    return a.slot().limit().index() <= b.slot().limit().index() ? a : b;
  }

  private List<Header> headers(Code overall, List<Status> statuses) {
    if (!settings.headers().enabled() && (overall != Code.OVER_LIMIT || !settings.retryAfter())) {
      return List.of(); // nothing to add: no list built
    }
    List<Header> headers = new ArrayList<>(4);
    if (settings.headers().enabled()) {
      Status pick = null;
      for (Status s : statuses) {
        boolean quota =
            s.currentLimit() != null && (s.currentLimit().quotaMode() || settings.quotaMode());
        if (s.code() == Code.OVER_LIMIT && !quota) {
          pick = s;
        }
      }
      if (pick == null) {
        for (Status s : statuses) {
          if (s.currentLimit() != null
              && (pick == null || s.limitRemaining() < pick.limitRemaining())) {
            pick = s;
          }
        }
      }
      if (pick != null) {
        headers.add(
            new Header(
                settings.headers().limit(),
                Long.toString(
                    java.util.Objects.requireNonNull(pick.currentLimit()).requestsPerUnit())));
        headers.add(
            new Header(settings.headers().remaining(), Long.toString(pick.limitRemaining())));
        headers.add(new Header(settings.headers().reset(), Long.toString(pick.resetSeconds())));
      }
    }
    if (overall == Code.OVER_LIMIT && settings.retryAfter()) {
      long retry = 0;
      for (Status s : statuses) {
        if (s.code() == Code.OVER_LIMIT) {
          retry = Math.max(retry, s.resetSeconds());
        }
      }
      if (retry > 0) {
        headers.add(new Header("retry-after", Long.toString(retry)));
      }
    }
    return List.copyOf(headers);
  }
}
