package io.sluice.core.store;

/**
 * Names of the store keys that belong to one pool (the pools' shares across replicas; layout in
 * docs/ratelimit.md, "Key layout"). Every such key carries the pool name as a Redis Cluster hash
 * tag, {@code {<pool>}}, so all keys of one pool live in one slot (one node) and a script or {@code
 * MULTI} touching several of them is never refused with {@code CROSSSLOT}. A key added for a pool
 * must be built by {@link #key(String, String, String)}.
 */
public final class PoolKeys {
  private PoolKeys() {}

  /** {@code {<pool>}}: the hash tag shared by every key of {@code pool}. */
  public static String tag(String pool) {
    return "{" + pool + "}";
  }

  /**
   * {@code <namespace>{<pool>}:<name>}; {@code namespace} keeps deployments that share one store
   * apart ({@code quotas.keyPrefix}, {@code sluice_} by default).
   */
  public static String key(String namespace, String pool, String name) {
    return namespace + tag(pool) + ":" + name;
  }

  /** {@code <namespace>{<pool>}:shares}: one hash per pool holding the replicas' leases. */
  public static String shares(String namespace, String pool) {
    return key(namespace, pool, "shares");
  }

  /** {@code <namespace>{<pool>}:limit}: one hash per adaptive pool holding its shared limit. */
  public static String limit(String namespace, String pool) {
    return key(namespace, pool, "limit");
  }

  /**
   * {@code <namespace>{<pool>}:reserve:<identity>}: one hash per learned-reserve key of the pool
   * ({@code io.sluice.core.estimate.ReserveSnapshot#identity}).
   */
  public static String reserve(String namespace, String pool, String identity) {
    return key(namespace, pool, "reserve:" + identity);
  }

  /** {@code <namespace>{<pool>}:reserve_index}: the pool's learned-reserve keys by last write. */
  public static String reserveIndex(String namespace, String pool) {
    return key(namespace, pool, "reserve_index");
  }
}
