package io.sluice.core.estimate;

/**
 * An answer's weight growth at a half-life of {@link OutputReserves}, {@code 2^(1/halfLife)}; the
 * losses' rate at it. Made once per reload, not per answer.
 */
record ReserveDecay(int halfLife, double growth, double alpha) {
  static ReserveDecay of(int halfLife) {
    double growth = Math.pow(2, 1.0 / halfLife);
    return new ReserveDecay(halfLife, growth, 1 - 1 / growth);
  }
}
