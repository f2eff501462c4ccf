package io.sluice.rls.config;

import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One limit attached to a descriptor node (or built from a request override).
 *
 * @param name optional name (echoed in {@code current_limit.name}, target of {@code replaces}); ""
 *     when none
 * @param unit null only when {@code unlimited}
 * @param requestsPerUnit uint32 range; 0 blocks everything
 * @param unitMultiplier window length in units (Sluice extension; 1 = the reference's window)
 * @param index position of the limit on its descriptor (0 for {@code rate_limit}); limits other
 *     than the first single-window one get a distinct cache key
 * @param failureMode empty = the process default
 * @param statKey descriptor path for metrics, e.g. {@code key_value.key2} (no domain)
 */
public record LimitSpec(
    String name,
    @Nullable RateLimitUnit unit,
    long requestsPerUnit,
    long unitMultiplier,
    boolean unlimited,
    boolean shadowMode,
    boolean quotaMode,
    boolean detailedMetric,
    List<String> replaces,
    Algorithm algorithm,
    Optional<FailureMode> failureMode,
    int index,
    String statKey) {

  public LimitSpec {
    replaces = List.copyOf(replaces);
  }

  /** Window length in seconds ({@code unit × unit_multiplier}); not asked of an unlimited one. */
  public long windowSeconds() {
    return java.util.Objects.requireNonNull(unit, "unit").seconds() * unitMultiplier;
  }

  /** Whether the cache key uses exactly envoyproxy/ratelimit's layout. */
  public boolean referenceKeyLayout() {
    return index == 0 && unitMultiplier == 1 && algorithm == Algorithm.FIXED_WINDOW;
  }

  /** A limit from a request's {@code limit} override: never shadow, no name, no replaces. */
  public static LimitSpec override(RateLimitUnit unit, long requestsPerUnit, String statKey) {
    return new LimitSpec(
        "",
        unit,
        requestsPerUnit,
        1,
        false,
        false,
        false,
        false,
        List.of(),
        Algorithm.FIXED_WINDOW,
        Optional.empty(),
        0,
        statKey);
  }

  public LimitSpec withStatKey(String key) {
    return new LimitSpec(
        name,
        unit,
        requestsPerUnit,
        unitMultiplier,
        unlimited,
        shadowMode,
        quotaMode,
        detailedMetric,
        replaces,
        algorithm,
        failureMode,
        index,
        key);
  }
}
