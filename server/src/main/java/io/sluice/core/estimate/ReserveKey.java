package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * A key of {@link OutputReserves} (pool, model, scope, quantile, tenant). Written out rather than a
 * record: a record's equals and hashCode go through method handles that the JIT did not inline here
 * (13 % of an LLM-shaped stream's CPU samples in four lookups); this one hashes its fields once and
 * compares the hash first.
 */
final class ReserveKey {
  private final String pool;
  private final String model;
  private final String scope;
  private final double quantile;
  private final String tenant;
  private final int hash;

  ReserveKey(String pool, String model, String scope, double quantile, String tenant) {
    this.pool = pool;
    this.model = model;
    this.scope = scope;
    this.quantile = quantile;
    this.tenant = tenant;
    int h = pool.hashCode();
    h = 31 * h + model.hashCode();
    h = 31 * h + scope.hashCode();
    h = 31 * h + Double.hashCode(quantile);
    this.hash = 31 * h + tenant.hashCode();
  }

  String pool() {
    return pool;
  }

  String model() {
    return model;
  }

  String scope() {
    return scope;
  }

  double quantile() {
    return quantile;
  }

  String tenant() {
    return tenant;
  }

  /**
   * Whether this key is the one of these names: {@link #equals} without building the other key (no
   * hash, no allocation).
   */
  boolean is(String pool, String model, String scope, double quantile, String tenant) {
    return Double.compare(this.quantile, quantile) == 0
        && this.pool.equals(pool)
        && this.model.equals(model)
        && this.scope.equals(scope)
        && this.tenant.equals(tenant);
  }

  /**
   * The key of these names: the last coarse key (no tenant) or the last tenant key asked when it is
   * that one, else a new one (then the last). Four keys per request were built, each with its hash,
   * for two lookups at the decision and two at the release, and a route's requests usually come
   * from one model and few tenants. A key handed out is equal to the one that would have been
   * built, so a map finds the same entry whatever instance asks. Thread-safe: volatile references
   * to immutable keys.
   */
  static ReserveKey of(String pool, String model, String scope, double quantile, String tenant) {
    boolean isCoarse = tenant.isEmpty();
    ReserveKey k = isCoarse ? lastCoarse : lastOwn;
    if (k != null && k.is(pool, model, scope, quantile, tenant)) {
      return k;
    }
    k = new ReserveKey(pool, model, scope, quantile, tenant);
    if (isCoarse) {
      lastCoarse = k;
    } else {
      lastOwn = k;
    }
    return k;
  }

  private static volatile @Nullable ReserveKey lastCoarse;
  private static volatile @Nullable ReserveKey lastOwn;

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o == this
        || (o instanceof ReserveKey k
            && k.hash == hash
            && Double.compare(k.quantile, quantile) == 0
            && k.pool.equals(pool)
            && k.model.equals(model)
            && k.scope.equals(scope)
            && k.tenant.equals(tenant));
  }

  @Override
  public String toString() {
    return "ReserveKey["
        + pool
        + ", "
        + model
        + ", "
        + scope
        + ", "
        + quantile
        + ", "
        + tenant
        + "]";
  }
}
