package io.sluice.core.admission;

import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A pool's requests in flight per tenant ({@link CapacityLedger}): a counter per tenant id, which
 * the permit taken carries ({@link Permit#tenantCount}) so that its release looks nothing up. A
 * tenant whose last request ended keeps its counter, at 0, so that its next request allocates
 * nothing; idle counters are dropped once the map reaches {@value #IDLE_KEPT} entries, or twice the
 * entries left after the last drop (tenant ids a client rotates leave a bounded trace).
 *
 * <p>The last tenant taken is remembered with its counter, so that a run of one tenant's requests
 * (the single-tenant default: every request is the anonymous tenant) looks nothing up. Idle
 * counters are dropped only by a take, which then remembers its own tenant: the one remembered is
 * always in the map.
 *
 * <p>Not thread-safe: guarded by the pool lock.
 */
final class TenantCounts {
  /** Entries kept before idle counters are dropped. */
  static final int IDLE_KEPT = 256;

  private final Map<String, int[]> byTenant = new HashMap<>();
  private int holding; // tenants with a request in flight
  private int dropAt = IDLE_KEPT;
  private @Nullable String lastId; // the tenant last taken, and its counter (in byTenant)
  private int @Nullable [] lastCount;

  /** One more request of {@code tenantId} in flight: its counter. */
  int[] take(String tenantId) {
    int[] c = tenantId.equals(lastId) ? lastCount : byTenant.get(tenantId);
    if (c == null) {
      if (byTenant.size() >= dropAt) {
        byTenant.values().removeIf(n -> n[0] == 0);
        dropAt = Math.max(IDLE_KEPT, 2 * byTenant.size());
      }
      c = new int[1];
      byTenant.put(tenantId, c);
    }
    if (c != lastCount) { // the same counter: the same tenant (no store, no write barrier)
      lastId = tenantId;
      lastCount = c;
    }
    if (c[0]++ == 0) {
      holding++;
    }
    return c;
  }

  /** One request fewer on {@code counter} (taken from {@link #take}, once per request). */
  void release(int[] counter) {
    if (--counter[0] == 0) {
      holding--;
    }
  }

  /** Requests of {@code tenantId} in flight. */
  int of(String tenantId) {
    int[] c = tenantId.equals(lastId) ? lastCount : byTenant.get(tenantId);
    return c == null ? 0 : c[0];
  }

  /** Tenants with a request in flight. */
  int holding() {
    return holding;
  }

  /** Counters kept, idle ones included (tests: the bound). */
  int entries() {
    return byTenant.size();
  }
}
