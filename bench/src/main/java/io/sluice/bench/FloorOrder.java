package io.sluice.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The order of one round's measured windows ({@code floor --order}). A target's ratio is its rate
 * over the no-op's <em>in the same round</em>, so where its window sits against the no-op's matters
 * whenever the machine's speed drifts within a round (JIT still compiling, another process):
 *
 * <ul>
 *   <li>{@code rotated} (the method before 2026-12-06 evening): the list rotated by one window per
 *       round. The cyclic order never changes, so a target always follows the same predecessor and
 *       sits the same number of windows after the no-op; with 7 targets the one listed sixth was
 *       measured <em>before</em> the no-op of its round in 5 rounds of 8 and the one listed second
 *       in 1: under a drift the two read different rates for the same server.
 *   <li>{@code mirrored} (the default): rounds come in pairs on the same rotation, the second
 *       reversed. A target {@code d} windows after the no-op in one round is {@code d} windows
 *       before it in the next, so a drift linear over the pair cancels, and each target follows a
 *       different predecessor in the two rounds.
 * </ul>
 */
enum FloorOrder {
  ROTATED,
  MIRRORED;

  /** The windows of round {@code round} (0-based), from the list's order {@code windows}. */
  <T> List<T> round(List<T> windows, int round) {
    int n = windows.size();
    if (n == 0) {
      return List.of();
    }
    int shift = this == ROTATED ? round : round / 2;
    List<T> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(windows.get((i + shift) % n));
    }
    if (this == MIRRORED && round % 2 == 1) {
      Collections.reverse(out);
    }
    return out;
  }

  /** {@code rotated} or {@code mirrored}. */
  static FloorOrder parse(String s) {
    return switch (s) {
      case "rotated" -> ROTATED;
      case "mirrored" -> MIRRORED;
      default ->
          throw new IllegalArgumentException("order: " + s + " (expected rotated or mirrored)");
    };
  }
}
