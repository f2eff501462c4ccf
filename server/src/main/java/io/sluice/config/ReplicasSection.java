package io.sluice.config;

import io.sluice.core.share.ReplicaPolicy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** The {@code replicas} section: leases and each pool's store-down behaviour. */
final class ReplicasSection {
  private ReplicasSection() {}

  private static final Set<String> POOL_MODE_KEYS =
      Set.of("storeDown", "keepShareFor", "expectedReplicas", "floor");

  /**
   * The {@code replicas} section: lease settings and each pool's store-down behaviour (used when
   * the store is shared, {@code BACKEND_TYPE=redis}).
   */
  static ReplicaPolicy read(Node n, Set<String> poolNames) {
    Set<String> keys = new java.util.HashSet<>(POOL_MODE_KEYS);
    keys.addAll(Set.of("leaseTtl", "renewInterval", "pools"));
    n.only(keys);
    ReplicaPolicy d = ReplicaPolicy.DEFAULT;
    Duration ttl = n.get("leaseTtl").duration(d.leaseTtl());
    if (ttl.compareTo(Duration.ofMillis(100)) < 0 || ttl.compareTo(Duration.ofMinutes(10)) > 0) {
      n.get("leaseTtl").invalid(ConfigWriter.duration(ttl), "a duration in 100ms..10m");
      ttl = d.leaseTtl();
    }
    Duration renew = n.get("renewInterval").duration(d.renewInterval());
    if (renew.compareTo(Duration.ofMillis(10)) < 0 || renew.multipliedBy(2).compareTo(ttl) > 0) {
      n.get("renewInterval")
          .invalid(
              ConfigWriter.duration(renew),
              "a duration in 10ms..half of replicas.leaseTtl (" + ConfigWriter.duration(ttl) + ")");
      renew =
          Duration.ofMillis(
              Math.max(10, Math.min(d.renewInterval().toMillis(), ttl.toMillis() / 2)));
    }
    ReplicaPolicy.PoolMode defaults = poolMode(n, ReplicaPolicy.DEFAULT_MODE, ttl);
    Map<String, ReplicaPolicy.PoolMode> perPool = new LinkedHashMap<>();
    for (var e : n.get("pools").entries().entrySet()) {
      Node p = e.getValue().only(POOL_MODE_KEYS);
      if (!poolNames.contains(e.getKey())) {
        p.error(
            p.path()
                + ": no such pool (expected: one of "
                + new java.util.TreeSet<>(poolNames)
                + ")");
        continue;
      }
      perPool.put(e.getKey(), poolMode(p, defaults, ttl));
    }
    return new ReplicaPolicy(ttl, renew, defaults, perPool);
  }

  private static ReplicaPolicy.PoolMode poolMode(
      Node n, ReplicaPolicy.PoolMode def, Duration leaseTtl) {
    ReplicaPolicy.StoreDown down =
        n.get("storeDown")
            .enumValue(
                ReplicaPolicy.StoreDown.class,
                def.storeDown(),
                e -> e.name().toLowerCase(java.util.Locale.ROOT));
    Duration keep = n.get("keepShareFor").duration(def.keepShareFor());
    if (keep.compareTo(leaseTtl) > 0) {
      n.get("keepShareFor")
          .invalid(
              ConfigWriter.duration(keep),
              "a duration up to replicas.leaseTtl ("
                  + ConfigWriter.duration(leaseTtl)
                  + "): past it the other replicas may take this one's share");
      keep = leaseTtl;
    }
    int expected = n.get("expectedReplicas").intValue(def.expectedReplicas(), 1, 10_000);
    double floor = n.get("floor").doubleValue(def.floor(), 0, 0.5);
    return new ReplicaPolicy.PoolMode(down, keep, expected, floor);
  }
}
