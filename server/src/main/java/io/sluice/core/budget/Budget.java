package io.sluice.core.budget;

import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One budget as configured: what it counts ({@link Meter}: tokens of a kind, or money from the
 * price table), how much of it per window of its {@link Period}, its soft thresholds and pacing
 * ({@link Terms}).
 *
 * @param name the budget's name (a metric label: bounded by the policy)
 * @param meter what it counts
 * @param period its billing period
 * @param terms its limit (in the meter's units; money in nano-units), thresholds and pacing burst
 * @param degradeAt the share of its limit used from which its requests ask for the degrade rung (0:
 *     never), or null: the section's {@code budgets.degradeAt}
 */
public record Budget(
    String name, Meter meter, Period period, Terms terms, @Nullable Double degradeAt) {
  public Budget {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(meter, "meter");
    Objects.requireNonNull(period, "period");
    Objects.requireNonNull(terms, "terms");
    if (degradeAt != null && !(degradeAt >= 0 && degradeAt <= 1)) {
      throw new IllegalArgumentException("degradeAt: " + degradeAt + " (expected: 0.0 .. 1.0)");
    }
  }

  /** What a budget counts. */
  public enum Meter {
    /** Every token, input (cached included) and output. */
    TOKENS("tokens"),
    /** Prompt tokens not read from the provider's cache. */
    INPUT_TOKENS("inputTokens"),
    /** Output tokens. */
    OUTPUT_TOKENS("outputTokens"),
    /** Prompt tokens read from the provider's cache. */
    CACHED_INPUT_TOKENS("cachedInputTokens"),
    /** Money, in nano-units of the currency, from the price table. */
    MONEY("money");

    private final String configName;

    Meter(String configName) {
      this.configName = configName;
    }

    public String configName() {
      return configName;
    }

    /** Whether it needs a price. */
    public boolean priced() {
      return this == MONEY;
    }

    /** The metric label ({@code tokens}, {@code input_tokens}, ...). */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The units {@code use} counts for, or -1 when money cannot be counted ({@code price} null).
     */
    public long units(TokenUse use, @Nullable Price price) {
      return switch (this) {
        case TOKENS -> use.total();
        case INPUT_TOKENS -> use.uncachedInput();
        case OUTPUT_TOKENS -> use.output();
        case CACHED_INPUT_TOKENS -> use.cachedInput();
        case MONEY -> price == null ? -1 : price.cost(use);
      };
    }
  }
}
