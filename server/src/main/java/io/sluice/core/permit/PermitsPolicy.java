package io.sluice.core.permit;

import java.time.Duration;

/**
 * The {@code permits} section (docs/permits.md): whether the permit API ({@code sluice.v1.Permits})
 * is served on the gRPC port, how long a permit's lease lasts without a renew, and how many leases
 * a replica keeps at most. Read at start: a reload does not add or remove the service.
 *
 * @param enabled serve the permit API (off by default: its callers name their tenant, so only
 *     trusted callers may reach the gRPC port)
 * @param lease how long a granted permit lives without {@code Renew} (its caller crashed: it goes
 *     back to the pool)
 * @param maxLeases leases kept at most by this replica; past it {@code RESOURCE_EXHAUSTED}
 */
public record PermitsPolicy(boolean enabled, Duration lease, int maxLeases) {
  public static final PermitsPolicy DEFAULTS =
      new PermitsPolicy(false, Duration.ofSeconds(30), 10_000);
}
