package io.sluice.core.time;

/**
 * Monotonic time source in nanoseconds. Queue age, deadlines and rate windows read time only
 * through a ticker so that every rule can be tested with {@link FakeTicker}-style fakes and no
 * sleeps. Compare values by subtraction, never by ordering absolute values.
 */
@FunctionalInterface
public interface Ticker {
  long nanos();

  /** The system's monotonic clock. */
  static Ticker system() {
    return System::nanoTime;
  }
}
