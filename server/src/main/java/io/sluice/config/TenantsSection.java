package io.sluice.config;

import io.sluice.core.policy.TierPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code tiers} and {@code tenants} sections: tenant tiers, and how a request's tenant maps to
 * one. Every error names its YAML path and the value expected.
 */
final class TenantsSection {
  private TenantsSection() {}

  /** The {@code tiers} section; without one, a single tier {@code default} at its defaults. */
  static Map<String, TierPolicy> tiers(Node n) {
    Map<String, TierPolicy> tiers = new LinkedHashMap<>();
    for (var e : n.entries().entrySet()) {
      Node t = e.getValue().only(Set.of("weight", "maxInFlight", "rpm", "inputTpm", "outputTpm"));
      TierPolicy d = TierPolicy.defaults(e.getKey());
      TierPolicy tp =
          t.build(
              () ->
                  TierPolicy.builder(e.getKey())
                      .weight(t.get("weight").doubleValue(d.weight(), 1e-6, 1e6))
                      .maxInFlight(t.get("maxInFlight").intValue(d.maxInFlight(), 0, 1_000_000))
                      .requestsPerMinute(
                          t.get("rpm").longValue(d.requestsPerMinute(), 0, 1_000_000_000L))
                      .inputTokensPerMinute(
                          t.get("inputTpm")
                              .longValue(d.inputTokensPerMinute(), 0, 1_000_000_000_000L))
                      .outputTokensPerMinute(
                          t.get("outputTpm")
                              .longValue(d.outputTokensPerMinute(), 0, 1_000_000_000_000L))
                      .build());
      if (tp != null) {
        tiers.put(e.getKey(), tp);
      }
    }
    if (tiers.isEmpty()) {
      tiers.put("default", TierPolicy.defaults("default"));
    }
    return tiers;
  }

  static SluiceConfig.Tenants read(Node t, Map<String, TierPolicy> tiers) {
    t.only(
        Set.of("anonymousTier", "unknown", "unknownTier", "known", "allowUnknownAboveAnonymous"));
    String first = tiers.keySet().iterator().next();
    String anon = t.get("anonymousTier").string(first);
    String unknownTier = t.get("unknownTier").string(anon);
    checkTier(t.get("anonymousTier"), anon, tiers);
    checkTier(t.get("unknownTier"), unknownTier, tiers);
    SluiceConfig.UnknownAction action =
        t.get("unknown")
            .enumValue(
                SluiceConfig.UnknownAction.class,
                SluiceConfig.UnknownAction.ADMIT,
                a -> a.name().toLowerCase(Locale.ROOT));
    Map<String, String> known = new LinkedHashMap<>();
    for (var e : t.get("known").entries().entrySet()) {
      Node k = e.getValue().only(Set.of("tier"));
      String tier = k.get("tier").requiredString();
      checkTier(k.get("tier"), tier, tiers);
      known.put(e.getKey(), tier);
    }
    boolean allowAbove = t.get("allowUnknownAboveAnonymous").bool(false);
    TierPolicy anonTier = tiers.get(anon);
    TierPolicy unknown = tiers.get(unknownTier);
    if (action == SluiceConfig.UnknownAction.ADMIT
        && !allowAbove
        && anonTier != null
        && unknown != null) {
      String better = betterThan(unknown, anonTier);
      if (better != null) {
        t.get("unknownTier")
            .invalid(
                unknownTier,
                "a tier no better than anonymousTier "
                    + anon
                    + " ("
                    + better
                    + "; a client that makes up a tenant id would get it), e.g. unknownTier: "
                    + anon
                    + ", or unknown: reject, or tenants.allowUnknownAboveAnonymous: true");
      }
    }
    return new SluiceConfig.Tenants(anon, action, unknownTier, Map.copyOf(known), allowAbove);
  }

  /**
   * Why tier {@code a} is better than {@code b} for its tenant (higher weight, a looser concurrency
   * cap, a larger or no budget), or null when it is not.
   */
  static @Nullable String betterThan(TierPolicy a, TierPolicy b) {
    List<String> why = new ArrayList<>();
    if (a.weight() > b.weight()) {
      why.add("weight " + fmt(a.weight()) + " > " + fmt(b.weight()));
    }
    String cap = looser("maxInFlight", a.maxInFlight(), b.maxInFlight());
    if (cap != null) {
      why.add(cap);
    }
    for (String w :
        new String[] {
          looser("rpm", a.requestsPerMinute(), b.requestsPerMinute()),
          looser("inputTpm", a.inputTokensPerMinute(), b.inputTokensPerMinute()),
          looser("outputTpm", a.outputTokensPerMinute(), b.outputTokensPerMinute())
        }) {
      if (w != null) {
        why.add(w);
      }
    }
    return why.isEmpty() ? null : String.join(", ", why);
  }

  /** For limits where 0 means none: is {@code a} looser than {@code b}? */
  private static @Nullable String looser(String name, long a, long b) {
    if (b == 0) {
      return null; // b has no limit: nothing is looser
    }
    if (a == 0) {
      return name + " unlimited > " + b;
    }
    return a > b ? name + " " + a + " > " + b : null;
  }

  private static String fmt(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static void checkTier(Node at, String tier, Map<String, TierPolicy> tiers) {
    if (!tiers.containsKey(tier)) {
      at.invalid(tier, "a tier defined under tiers: " + String.join(", ", tiers.keySet()));
    }
  }
}
