package io.sluice.core.store;

/**
 * Names of the store keys that belong to one pool (reserved for the pools' shares across replicas;
 * layout in docs/ratelimit.md, "Key layout"). Every such key carries the pool name as a Redis
 * Cluster hash tag, {@code {<pool>}}, so all keys of one pool live in one slot (one node) and a
 * script or {@code MULTI} touching several of them is never refused with {@code CROSSSLOT}. A key
 * added for a pool must be built by {@link #key(String, String)}.
 */
public final class PoolKeys {
  private PoolKeys() {}

  /** {@code {<pool>}}: the hash tag shared by every key of {@code pool}. */
  public static String tag(String pool) {
    return "{" + pool + "}";
  }

  /** {@code sluice:{<pool>}:<name>}. */
  public static String key(String pool, String name) {
    return "sluice:" + tag(pool) + ":" + name;
  }

  /** {@code sluice:{<pool>}:shares}: one hash per pool holding the replicas' shares. */
  public static String shares(String pool) {
    return key(pool, "shares");
  }
}
