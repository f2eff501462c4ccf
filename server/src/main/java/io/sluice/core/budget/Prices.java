package io.sluice.core.budget;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The price table: per model, its prices with their effective dates (the latest one in effect at
 * the request's arrival applies), and what a model missing from the table gets: a declared default
 * price, or a refusal.
 */
public final class Prices {
  /** What a model with no price in effect gets. */
  public enum Unknown {
    /** The table's default price. */
    DEFAULT,
    /** The request is refused ({@code budget_unpriced}): money cannot be counted for it. */
    REFUSE
  }

  /** No prices: budgets count tokens only; a money budget refuses or uses {@code fallback}. */
  public static final Prices NONE = new Prices(Map.of(), null, Unknown.REFUSE);

  private final Map<String, List<Price>> byModel; // each list sorted by from, ascending
  private final @Nullable Price fallback;
  private final Unknown unknown;

  /**
   * @param byModel each model's prices (any order; two with the same {@code from} are an error)
   * @param fallback the default price ({@code unknown: DEFAULT} needs one)
   * @param unknown what a model with no price in effect gets
   */
  public Prices(Map<String, List<Price>> byModel, @Nullable Price fallback, Unknown unknown) {
    Objects.requireNonNull(unknown, "unknown");
    if (unknown == Unknown.DEFAULT && fallback == null) {
      throw new IllegalArgumentException("prices.unknownModel: default needs prices.default");
    }
    Map<String, List<Price>> m = new TreeMap<>();
    byModel.forEach(
        (model, list) -> {
          List<Price> sorted = new ArrayList<>(list);
          sorted.sort(Comparator.comparing(Price::from));
          for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).from().equals(sorted.get(i - 1).from())) {
              throw new IllegalArgumentException(
                  "prices." + model + ": two prices from " + sorted.get(i).from());
            }
          }
          m.put(model, List.copyOf(sorted));
        });
    this.byModel = Map.copyOf(m);
    this.fallback = fallback;
    this.unknown = unknown;
  }

  /**
   * The price of {@code model} at {@code at}: the latest of its prices in effect, else the default
   * with {@code unknown: DEFAULT}, else null (refuse).
   */
  public @Nullable Price at(@Nullable String model, Instant at) {
    List<Price> list = model == null ? null : byModel.get(model);
    if (list != null) {
      for (int i = list.size() - 1; i >= 0; i--) {
        if (!list.get(i).from().isAfter(at)) {
          return list.get(i);
        }
      }
    }
    return unknown == Unknown.DEFAULT ? fallback : null;
  }

  /** Each model's prices, sorted by when they take effect. */
  public Map<String, List<Price>> byModel() {
    return byModel;
  }

  /** The default price, or null. */
  public @Nullable Price fallback() {
    return fallback;
  }

  /** What a model with no price in effect gets. */
  public Unknown unknown() {
    return unknown;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof Prices p
        && byModel.equals(p.byModel)
        && Objects.equals(fallback, p.fallback)
        && unknown == p.unknown;
  }

  @Override
  public int hashCode() {
    return Objects.hash(byModel, fallback, unknown);
  }

  @Override
  public String toString() {
    return "Prices[" + byModel + ", default " + fallback + ", unknownModel " + unknown + "]";
  }

  /** The models priced. */
  public java.util.Set<String> models() {
    return byModel.keySet();
  }
}
