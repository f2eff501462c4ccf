package io.sluice.core.retry;

import io.sluice.core.policy.Tenant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The store keys of {@link RetryControl}'s requests with no operation id (a tenant's refusal memory
 * and budget bucket), per pool and tenant, or per pool and client address for the anonymous tenant
 * ({@link RetryControl#client}), so the common request builds no strings. Both maps are bounded:
 * past their size per pool they start over (keys dropped are rebuilt; the buckets live in the
 * store). Thread-safe.
 */
final class RetryKeyCache {
  /**
   * Tenants are what the operator's signals resolve, but bounded all the same: past this many per
   * pool the map starts over.
   */
  static final int MAX_CACHED_TENANTS = 4096;

  /**
   * Each client of the anonymous tenant has its own refusal memory and budget bucket, so one
   * client's retries never spend another's. Client addresses are many and not the operator's
   * choice, so past this many per pool the map starts over (a client whose keys were dropped
   * rebuilds them; its bucket lives in the store, bounded there).
   */
  static final int MAX_CACHED_CLIENTS = 4096;

  private final ConcurrentMap<String, ConcurrentMap<String, TenantKeys>> tenantKeys =
      new ConcurrentHashMap<>();
  private final ConcurrentMap<String, ConcurrentMap<String, TenantKeys>> clientKeys =
      new ConcurrentHashMap<>();
  private final RetryPolicy.Budget budget;
  private final String namespace;
  private final LongSupplier nanoTime;

  /** A tenant's keys, and its originals not yet sent to a shared store. */
  static final class TenantKeys {
    final String refusal;
    final @Nullable String budget;
    final AtomicLong deferred = new AtomicLong();
    volatile long lastSentNanos;

    TenantKeys(String refusal, @Nullable String budget, long nowNanos) {
      this.refusal = refusal;
      this.budget = budget;
      this.lastSentNanos = nowNanos;
    }

    String refusal() {
      return refusal;
    }

    @Nullable String budget() {
      return budget;
    }
  }

  /**
   * @param nanoTime the process's ticker: a new entry's {@link TenantKeys#lastSentNanos}
   */
  RetryKeyCache(RetryPolicy.Budget budget, String namespace, LongSupplier nanoTime) {
    this.budget = budget;
    this.namespace = namespace;
    this.nanoTime = nanoTime;
  }

  /** The keys of {@code tenant}'s requests in {@code pool}. */
  TenantKeys tenant(String pool, String tenant) {
    return find(tenantKeys, MAX_CACHED_TENANTS, pool, tenant, false);
  }

  /** The keys of the anonymous tenant's requests from {@code client} in {@code pool}. */
  TenantKeys client(String pool, String client) {
    return find(clientKeys, MAX_CACHED_CLIENTS, pool, client, true);
  }

  /** {@code owner}'s keys in {@code pool} (a tenant, or the anonymous tenant's client). */
  private TenantKeys find(
      ConcurrentMap<String, ConcurrentMap<String, TenantKeys>> cache,
      int max,
      String pool,
      String owner,
      boolean client) {
    ConcurrentMap<String, TenantKeys> byOwner = cache.get(pool);
    if (byOwner == null) {
      byOwner = cache.computeIfAbsent(pool, p -> new ConcurrentHashMap<>());
    }
    TenantKeys k = byOwner.get(owner);
    if (k == null) {
      if (byOwner.size() >= max) {
        byOwner.clear();
      }
      k =
          client
              ? new TenantKeys(
                  RetryKeys.refusal(namespace, pool, Tenant.ANONYMOUS, owner, null),
                  budgetKey(pool, Tenant.ANONYMOUS, owner),
                  nanoTime.getAsLong())
              : new TenantKeys(
                  RetryKeys.refusal(namespace, pool, owner, null),
                  budgetKey(pool, owner, null),
                  nanoTime.getAsLong());
      byOwner.put(owner, k);
    }
    return k;
  }

  /** Tenants whose keys are cached for {@code pool} (tests: the bound). */
  int cachedTenants(String pool) {
    ConcurrentMap<String, TenantKeys> byTenant = tenantKeys.get(pool);
    return byTenant == null ? 0 : byTenant.size();
  }

  /** Client addresses whose keys are cached for {@code pool} (tests: the bound). */
  int cachedClients(String pool) {
    ConcurrentMap<String, TenantKeys> byClient = clientKeys.get(pool);
    return byClient == null ? 0 : byClient.size();
  }

  private @Nullable String budgetKey(String pool, String tenant, @Nullable String client) {
    return budget.enabled()
        ? RetryKeys.budget(
            namespace,
            pool,
            budget.scope() == RetryPolicy.Budget.Scope.TENANT ? tenant : null,
            client)
        : null;
  }
}
