package io.sluice.core.queue;

/** Saturating long arithmetic for nanosecond offsets, so huge offsets clamp instead of wrap. */
final class Saturating {
  private Saturating() {}

  static long sub(long a, long b) {
    long r = a - b;
    // overflow iff a and b have different signs and r's sign differs from a's
    if (((a ^ b) & (a ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }

  static long add(long a, long b) {
    long r = a + b;
    if (((a ^ r) & (b ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }

  /** Converts a non-negative double of nanos to long, clamping at {@code Long.MAX_VALUE / 4}. */
  static long nanos(double nanos) {
    if (!(nanos > 0)) {
      return 0;
    }
    double cap = Long.MAX_VALUE / 4.0;
    return nanos >= cap ? (long) cap : (long) Math.ceil(nanos);
  }
}
