package io.sluice.bootstrap;

import io.micrometer.core.instrument.Clock;
import io.sluice.core.time.Ticker;
import java.util.function.LongSupplier;

/**
 * The meter registry's clock: monotonic time exact ({@link System#nanoTime}: every duration and
 * {@code Timer.Sample} Micrometer measures with it), wall time coarse. Micrometer reads the wall
 * time on every record of a timer or distribution summary (its decaying max, {@code TimeWindowMax},
 * and its histogram check whether their window is due to rotate: every two minutes, never for the
 * Prometheus histogram), about twelve reads of the system clock per LLM-shaped request; here it is
 * one volatile read.
 *
 * <p>The wall time is refreshed by the process's ticker ({@link #feeding}): a ticker read at least
 * {@link #REFRESH_NANOS} after the last refresh reads the system clock once. Every ext_proc message
 * and every rate limit call reads the ticker before it records, so while requests flow the wall
 * time is at most a millisecond behind; and {@link #refresh()} before each scrape makes the windows
 * a scrape shows rotate at the exact instant. When the process is idle the value may be old, but
 * nothing records then; the next request's first ticker read refreshes it before its records. A
 * late rotation only keeps a max in its window a little longer (never drops one early).
 *
 * <p>Concurrency: two volatile fields; a refresh may race another, both write the system clock's
 * value of about the same instant.
 */
final class MeterClock implements Clock {
  /** How far the ticker moves before a ticker read refreshes the wall time: one millisecond. */
  static final long REFRESH_NANOS = 1_000_000L;

  private final LongSupplier systemMillis;
  private volatile long wallMillis;
  private volatile long refreshedNanos;

  /**
   * @param systemMillis the system's wall clock ({@code System::currentTimeMillis}; a fake in
   *     tests)
   */
  MeterClock(LongSupplier systemMillis) {
    this.systemMillis = systemMillis;
    this.wallMillis = systemMillis.getAsLong();
  }

  /** On the system's wall clock. */
  static MeterClock system() {
    return new MeterClock(System::currentTimeMillis);
  }

  @Override
  public long wallTime() {
    return wallMillis;
  }

  @Override
  public long monotonicTime() {
    return System.nanoTime();
  }

  /**
   * {@code ticker}, whose reads keep this clock's wall time fresh: the same nanos, plus a read of
   * the system clock when it moved {@link #REFRESH_NANOS} since the last refresh.
   */
  Ticker feeding(Ticker ticker) {
    return () -> {
      long now = ticker.nanos();
      if (now - refreshedNanos >= REFRESH_NANOS) {
        refreshedNanos = now;
        wallMillis = systemMillis.getAsLong();
      }
      return now;
    };
  }

  /** Reads the system clock now (before a scrape). */
  void refresh() {
    wallMillis = systemMillis.getAsLong();
  }
}
