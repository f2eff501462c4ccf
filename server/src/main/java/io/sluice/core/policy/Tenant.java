package io.sluice.core.policy;

import java.util.Objects;

/** The accountable identity of a request and the tier it belongs to. */
public record Tenant(String id, TierPolicy tier) {
  public static final String ANONYMOUS = "anonymous";

  public Tenant {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(tier, "tier");
  }

  /**
   * The human-readable text of a {@code tenant_concurrency} refusal by this tenant's tier cap: for
   * the anonymous tenant it says that the request carried no tenant, that every such request shares
   * that one tenant, and which settings set the cap; for any other tenant {@code detail} as is.
   */
  public String capRefusal(String detail) {
    if (!id.equals(ANONYMOUS)) {
      return detail;
    }
    return "anonymous tenant: the request carried no tenant, and every request without one shares"
        + " this tenant's cap (tenants.anonymousTier: "
        + tier.name()
        + ", tiers."
        + tier.name()
        + ".maxInFlight: "
        + tier.maxInFlight()
        + "; set signals.tenant to a source your Envoy sends, docs/configuration.md): "
        + detail;
  }
}
