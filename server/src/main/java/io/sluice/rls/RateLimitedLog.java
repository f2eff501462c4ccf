package io.sluice.rls;

import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;

/**
 * A WARN line at most once per interval, with the number of lines suppressed since the last one, so
 * a flood of bad calls cannot flood the log.
 */
final class RateLimitedLog {
  private final Logger log;
  private final long intervalNanos;
  private final AtomicLong nextAt = new AtomicLong(Long.MIN_VALUE);
  private final AtomicLong suppressed = new AtomicLong();

  RateLimitedLog(Logger log, long intervalMillis) {
    this.log = log;
    this.intervalNanos = intervalMillis * 1_000_000L;
  }

  void warn(String format, Object arg) {
    long now = System.nanoTime();
    long next = nextAt.get();
    if ((next == Long.MIN_VALUE || now - next >= 0)
        && nextAt.compareAndSet(next, now + intervalNanos)) {
      long n = suppressed.getAndSet(0);
      if (n > 0) {
        log.warn(format + " (" + n + " similar suppressed)", arg);
      } else {
        log.warn(format, arg);
      }
    } else {
      suppressed.incrementAndGet();
    }
  }
}
