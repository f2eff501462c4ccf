package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import java.util.List;

/**
 * Which tenant sources the Envoy configs shipped in {@code envoy-config/} actually set. A policy
 * whose {@code signals.tenant} names none of them files every request behind those configs under
 * the one anonymous tenant, whatever token the client presented: {@code sluice validate} and the
 * start-up log say so. {@code ShippedPairsTest} fails when a shipped config stops setting one of
 * these, or when a shipped policy reads none of them.
 */
public final class TenantSignals {
  /** The JWT claim's header: {@code jwt_authn} {@code claim_to_headers}, after the sanitizer. */
  public static final Source CLAIM_HEADER = new Source.Header("x-tenant-id");

  /** The verified JWT payload that {@code envoy.yaml} forwards to ext_proc. */
  public static final Source JWT_PAYLOAD =
      new Source.DynamicMetadata("envoy.filters.http.jwt_authn", List.of("jwt_payload", "tenant"));

  /** Tenant sources a shipped Envoy config sets from something it verified. */
  public static final List<Source> SET_BY_SHIPPED_ENVOY_CONFIGS =
      List.of(CLAIM_HEADER, JWT_PAYLOAD);

  private TenantSignals() {}

  /**
   * One warning when the policy names tenant sources and none of them is set by a shipped Envoy
   * config, else none. A policy with no tenant source at all is single-tenant on purpose: no
   * warning.
   */
  public static List<String> warnings(SluiceConfig config) {
    List<Source> sources = config.signals().getOrDefault(Signal.TENANT, List.of());
    if (sources.isEmpty()) {
      return List.of();
    }
    for (Source s : sources) {
      if (SET_BY_SHIPPED_ENVOY_CONFIGS.contains(s)) {
        return List.of();
      }
    }
    return List.of(
        "signals.tenant: "
            + describe(sources)
            + " is set by none of the shipped Envoy configs (envoy-config/), so behind them every"
            + " request is the anonymous tenant (tenants.anonymousTier: "
            + config.tenants().anonymousTier()
            + "); add {header: x-tenant-id} (the verified JWT claim, client copies stripped) or"
            + " make your Envoy set one of these sources (see docs/configuration.md, Tenants)");
  }

  private static String describe(List<Source> sources) {
    StringBuilder b = new StringBuilder();
    for (Source s : sources) {
      if (b.length() > 0) {
        b.append(", ");
      }
      if (s instanceof Source.Metadata m) {
        b.append("metadata ").append(m.metadata());
      } else if (s instanceof Source.Header h) {
        b.append("header ").append(h.header());
      } else if (s instanceof Source.DynamicMetadata d) {
        b.append("dynamicMetadata ")
            .append(d.namespace())
            .append(' ')
            .append(String.join(".", d.path()));
      } else if (s instanceof Source.Attribute a) {
        b.append("attribute ").append(a.attribute());
      }
    }
    return b.toString();
  }
}
