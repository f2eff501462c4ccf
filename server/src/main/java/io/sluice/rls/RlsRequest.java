package io.sluice.rls;

import io.sluice.rls.config.RateLimitConfig.Entry;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A ShouldRateLimit call in domain terms.
 *
 * @param hitsAddend request-level weight; 0 means 1
 */
public record RlsRequest(String domain, List<Descriptor> descriptors, long hitsAddend) {
  public RlsRequest {
    descriptors = List.copyOf(descriptors);
  }

  /**
   * One request descriptor.
   *
   * @param limitOverride the descriptor's {@code limit} override, if sent
   * @param hitsAddend the descriptor's own weight if sent (0 = check only)
   */
  public record Descriptor(
      List<Entry> entries, Optional<LimitOverride> limitOverride, OptionalLong hitsAddend) {
    public Descriptor {
      entries = List.copyOf(entries);
    }

    public static Descriptor of(String... keyValues) {
      Entry[] es = new Entry[keyValues.length / 2];
      for (int i = 0; i < es.length; i++) {
        es[i] = new Entry(keyValues[2 * i], keyValues[2 * i + 1]);
      }
      return new Descriptor(List.of(es), Optional.empty(), OptionalLong.empty());
    }

    public Descriptor withHitsAddend(long hits) {
      return new Descriptor(entries, limitOverride, OptionalLong.of(hits));
    }

    public Descriptor withOverride(int unitNumber, long requestsPerUnit) {
      return new Descriptor(
          entries, Optional.of(new LimitOverride(unitNumber, requestsPerUnit)), hitsAddend);
    }
  }

  /** {@code RateLimitOverride}: {@code unitNumber} is {@code envoy.type.v3.RateLimitUnit}. */
  public record LimitOverride(int unitNumber, long requestsPerUnit) {}
}
