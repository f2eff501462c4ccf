package io.sluice.rls.config;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * An immutable, loaded set of domains. Published as one reference and swapped atomically on reload;
 * readers never lock.
 */
public final class RateLimitConfig {
  /** A request descriptor entry. */
  public record Entry(String key, String value) {}

  /**
   * The limits that apply to one request descriptor.
   *
   * @param limits empty when nothing matched (or the match is an allow-list entry)
   * @param cacheValues per entry, the value to put in the cache key (the wildcard pattern where a
   *     {@code share_threshold} node matched, else the request's value)
   */
  public record Match(List<LimitSpec> limits, List<String> cacheValues) {
    public static final Match NONE = new Match(List.of(), List.of());
  }

  private final Map<String, DescriptorNode> domains;
  private final List<String> fileKeys;

  RateLimitConfig(Map<String, DescriptorNode> domains, List<String> fileKeys) {
    this.domains = Collections.unmodifiableMap(domains);
    for (DescriptorNode root : domains.values()) {
      root.freeze();
    }
    this.fileKeys = List.copyOf(fileKeys);
  }

  public static RateLimitConfig empty() {
    return new RateLimitConfig(Map.of(), List.of());
  }

  public Set<String> domains() {
    return domains.keySet();
  }

  public boolean hasDomain(String domain) {
    return domains.containsKey(domain);
  }

  /** Keys of the files this config was built from. */
  public List<String> fileKeys() {
    return fileKeys;
  }

  public @Nullable DescriptorNode domain(String domain) {
    return domains.get(domain);
  }

  /**
   * envoyproxy/ratelimit's lookup: per level, the exact {@code key_value} child, else the first
   * wildcard child in file order that matches, else the key-only child. The limits apply only when
   * the request's last entry lands on a node that has them (exact depth, no backtracking).
   */
  public Match match(String domain, List<Entry> entries) {
    DescriptorNode level = domains.get(domain);
    if (level == null || entries.isEmpty()) {
      return Match.NONE;
    }
    List<LimitSpec> found = List.of();
    String[] patterns = null; // cache-key values that differ from the request's (share_threshold)
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      DescriptorNode next = level.child(e.key(), e.value());
      if (next == null && !level.wildcards.isEmpty()) {
        String keyValue = e.key() + "_" + e.value();
        for (DescriptorNode w : level.wildcards) {
          if (w.matches(keyValue)) {
            next = w;
            break;
          }
        }
      }
      if (next == null) {
        next = level.children.get(e.key());
      }
      if (next == null) {
        return Match.NONE;
      }
      if (next.shareThreshold()) {
        if (patterns == null) {
          patterns = new String[entries.size()];
        }
        patterns[i] = next.value();
      }
      boolean last = i == entries.size() - 1;
      if (last && !next.limits().isEmpty()) {
        found = next.limits();
      }
      if (next.children.isEmpty() || last) {
        if (!last) {
          return Match.NONE;
        }
        if (!found.isEmpty() && found.get(0).detailedMetric()) {
          List<LimitSpec> detailed = new ArrayList<>(found.size());
          for (LimitSpec l : found) {
            detailed.add(l.withStatKey(l.statKey() + "_" + e.value()));
          }
          found = detailed;
        }
        return new Match(found, new CacheValues(entries, patterns));
      }
      level = next;
    }
    return Match.NONE;
  }

  /**
   * The cache-key values of a match: the request's values, but the pattern where a {@code
   * share_threshold} node matched. A view over the request's entries (nothing copied per call).
   */
  private static final class CacheValues extends AbstractList<String> implements RandomAccess {
    private final List<Entry> entries;
    private final String @Nullable [] patterns;

    CacheValues(List<Entry> entries, String @Nullable [] patterns) {
      this.entries = entries;
      this.patterns = patterns;
    }

    @Override
    public String get(int i) {
      String p = patterns == null ? null : patterns[i];
      return p != null ? p : entries.get(i).value();
    }

    @Override
    public int size() {
      return entries.size();
    }
  }

  /** A human-readable dump of the loaded limits, like the reference's {@code /rlconfig}. */
  public String dump() {
    StringBuilder sb = new StringBuilder();
    domains.forEach((d, root) -> dump(sb, d, root));
    return sb.toString();
  }

  private static void dump(StringBuilder sb, String domain, DescriptorNode node) {
    for (DescriptorNode child : node.children.values()) {
      for (LimitSpec l : child.limits()) {
        sb.append(domain)
            .append('.')
            .append(l.statKey())
            .append(": ")
            .append(
                l.unlimited()
                    ? "unlimited"
                    : "unit="
                        + l.unit()
                        + (l.unitMultiplier() > 1 ? "x" + l.unitMultiplier() : "")
                        + " requests_per_unit="
                        + l.requestsPerUnit())
            .append(", algorithm=")
            .append(l.algorithm().name().toLowerCase(java.util.Locale.ROOT))
            .append(", shadow_mode: ")
            .append(l.shadowMode())
            .append('\n');
      }
      dump(sb, domain, child);
    }
  }
}
