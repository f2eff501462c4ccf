package io.sluice.core.estimate;

import java.util.Map;

/**
 * One learned-reserve key's state (or a replica's additions to it) as the replicas exchange it
 * through a {@link ReserveStore}: the key, and its numbers by field name. Fields: {@code w} the
 * decayed weight of the answers learned, {@code n} their decayed count, {@code la}/{@code la2} and
 * {@code lr}/{@code lr2} the weighted sums of the logarithms (and their squares) of the absolute
 * and relative values, {@code a<i>}/{@code r<i>} the weight of bucket {@code i} of each histogram.
 * All are sums over answers, so two replicas' additions add, and decaying a state multiplies every
 * field by the same factor.
 *
 * @param tenant empty for the coarse key
 */
public record ReserveSnapshot(
    String pool,
    String model,
    String scope,
    double quantile,
    String tenant,
    Map<String, Double> fields) {
  public ReserveSnapshot {
    fields = Map.copyOf(fields);
  }

  /** The key as one string (the store's member name): its parts joined by U+001F. */
  public String identity() {
    return pool + '\u001f' + model + '\u001f' + scope + '\u001f' + quantile + '\u001f' + tenant;
  }

  /** The key of {@link #identity()} with {@code fields}, or null when it is not one. */
  public static @org.jspecify.annotations.Nullable ReserveSnapshot of(
      String identity, Map<String, Double> fields) {
    String[] p = identity.split("\u001f", -1);
    if (p.length != 5) {
      return null;
    }
    try {
      return new ReserveSnapshot(p[0], p[1], p[2], Double.parseDouble(p[3]), p[4], fields);
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
