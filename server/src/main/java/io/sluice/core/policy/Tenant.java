package io.sluice.core.policy;

import java.util.Objects;

/** The accountable identity of a request and the tier it belongs to. */
public record Tenant(String id, TierPolicy tier) {
  public static final String ANONYMOUS = "anonymous";

  public Tenant {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(tier, "tier");
  }
}
