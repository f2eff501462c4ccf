package io.sluice.config;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The {@code rateLimit} section (the envoyproxy/ratelimit drop-in) and the {@code quotas} section
 * (tenant budgets kept in that service's store).
 */
final class RateLimitSection {
  private RateLimitSection() {}

  static SluiceConfig.RateLimit read(Node n) {
    Node rl = n.only(Set.of("enabled", "env"));
    Map<String, String> env = new LinkedHashMap<>();
    for (var e : rl.get("env").entries().entrySet()) {
      env.put(e.getKey(), e.getValue().requiredString());
    }
    return new SluiceConfig.RateLimit(
        rl.get("enabled").bool(SluiceConfig.RateLimit.DEFAULTS.enabled()), Map.copyOf(env));
  }

  static SluiceConfig.Quotas quotas(Node n) {
    SluiceConfig.Quotas d = SluiceConfig.Quotas.DEFAULTS;
    Node qn = n.only(Set.of("failureMode", "keyPrefix"));
    String qfm = qn.get("failureMode").string(d.failureMode().configName());
    SluiceConfig.Quotas.FailureMode mode = d.failureMode();
    if (qfm.equals("closed")) {
      mode = SluiceConfig.Quotas.FailureMode.CLOSED;
    } else if (!qfm.equals("open")) {
      qn.get("failureMode").invalid(qfm, "open or closed");
    }
    return new SluiceConfig.Quotas(mode, qn.get("keyPrefix").string(d.keyPrefix()));
  }
}
