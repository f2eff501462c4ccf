package io.sluice.extproc;

import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The adapter's WARN lines about single streams (a malformed frame, an internal failure, a stream
 * that ended before a decision), rate-limited across the process: at most {@link #BURST} lines,
 * refilled at one per {@link #REFILL_NANOS}; lines beyond are counted and the next line written
 * says how many were suppressed. One line per stream, never a stack trace: a flood of bad streams
 * costs a counter increment each, not a log volume (the metrics count every one of them).
 */
final class StreamWarnings {
  static final Logger LOG = LoggerFactory.getLogger("io.sluice.extproc.ExtProcStream");
  static final int BURST = 20;
  static final long REFILL_NANOS = 1_000_000_000L; // one line per second after the burst

  // Token bucket in one long: the time at which the bucket is empty again ("theoretical arrival").
  private static final AtomicLong EMPTY_AT = new AtomicLong(Long.MIN_VALUE);
  private static final AtomicLong SUPPRESSED = new AtomicLong();
  private static final AtomicLong WRITTEN = new AtomicLong();
  private static final AtomicLong ATTEMPTS = new AtomicLong();

  private StreamWarnings() {}

  /** Writes one WARN line unless the process-wide budget is used up (then counts it). */
  static void warn(String format, @Nullable Object... args) {
    ATTEMPTS.incrementAndGet();
    if (!LOG.isWarnEnabled()) {
      return;
    }
    // The process's clock, not a stream's ticker: this paces log volume, not an admission rule.
    if (!take(System.nanoTime())) {
      SUPPRESSED.incrementAndGet();
      return;
    }
    WRITTEN.incrementAndGet();
    long suppressed = SUPPRESSED.getAndSet(0);
    if (suppressed > 0) {
      LOG.warn(format + " ({} similar lines suppressed)", append(args, suppressed));
    } else {
      LOG.warn(format, args);
    }
  }

  private static boolean take(long now) {
    long burstNanos = BURST * REFILL_NANOS;
    while (true) {
      long emptyAt = EMPTY_AT.get();
      long base = emptyAt == Long.MIN_VALUE || emptyAt - now < 0 ? now : emptyAt;
      long next = base + REFILL_NANOS;
      if (next - now > burstNanos) {
        return false;
      }
      if (EMPTY_AT.compareAndSet(emptyAt, next)) {
        return true;
      }
    }
  }

  private static Object[] append(Object[] args, Object last) {
    Object[] a = java.util.Arrays.copyOf(args, args.length + 1);
    a[args.length] = last;
    return a;
  }

  /** Lines asked for (written or suppressed) since start (tests). */
  static long attempts() {
    return ATTEMPTS.get();
  }

  /** Lines written and suppressed since start (tests). */
  static long written() {
    return WRITTEN.get();
  }

  static long suppressed() {
    return SUPPRESSED.get();
  }
}
