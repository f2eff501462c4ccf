package io.sluice.core.budget;

import java.util.List;

/**
 * What one budget allows in one window: {@code limit} units (tokens, or nano-units of money), the
 * soft thresholds (fractions of the limit, ascending, each announced once per window), and the
 * pacing burst ({@code 0}: no pacing; else the remaining budget is spread over the remaining window
 * as a rate, with at most {@code burst} units spent at once above it).
 */
public record Terms(long limit, List<Double> thresholds, long burst) {
  public Terms {
    if (limit < 1) {
      throw new IllegalArgumentException("budget limit " + limit + " (expected: >= 1)");
    }
    if (burst < 0) {
      throw new IllegalArgumentException("budget pacing burst " + burst + " (expected: >= 0)");
    }
    thresholds = List.copyOf(thresholds);
    for (int i = 0; i < thresholds.size(); i++) {
      double t = thresholds.get(i);
      if (!(t > 0 && t < 1) || (i > 0 && t <= thresholds.get(i - 1))) {
        throw new IllegalArgumentException(
            "budget thresholds " + thresholds + " (expected: ascending, in (0, 1))");
      }
    }
  }

  /** Whether the remaining budget is paced over the remaining window. */
  public boolean paced() {
    return burst > 0;
  }

  /** The highest threshold index {@code used} reached ({@code -1}: none). */
  public int thresholdReached(long used) {
    int reached = -1;
    for (int i = 0; i < thresholds.size(); i++) {
      if (used >= Math.ceil(thresholds.get(i) * limit)) {
        reached = i;
      }
    }
    return reached;
  }
}
