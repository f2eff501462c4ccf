package io.sluice.store.redis;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The {@code renew} call of the leased-holders script ({@code leased_places.lua}): the keys of the
 * owners a replica holds places of, and as arguments {@code renew}, the lease, each key's holder
 * count, then every holder, in key order.
 */
final class LeaseRenewal {
  private LeaseRenewal() {}

  /**
   * The call's keys and arguments ({@code [0]} and {@code [1]}), or null when nothing is held.
   *
   * @param held places held by owner (those at 0 are skipped)
   * @param keyOf an owner's key
   * @param mine the holders this replica was granted under a key, or null (read under the store's
   *     lock: call this while holding it)
   */
  static String @Nullable [][] call(
      Map<String, Integer> held,
      long leaseTtlMillis,
      Function<String, String> keyOf,
      Function<String, @Nullable Collection<String>> mine) {
    List<String> keys = new ArrayList<>();
    List<String> counts = new ArrayList<>();
    List<String> names = new ArrayList<>();
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      String key = keyOf.apply(e.getKey());
      Collection<String> m = mine.apply(key);
      if (e.getValue() <= 0 || m == null || m.isEmpty()) {
        continue;
      }
      keys.add(key);
      counts.add(Integer.toString(m.size()));
      names.addAll(m);
    }
    if (keys.isEmpty()) {
      return null;
    }
    List<String> args = new ArrayList<>(2 + counts.size() + names.size());
    args.add("renew");
    args.add(Long.toString(Math.max(1, leaseTtlMillis)));
    args.addAll(counts);
    args.addAll(names);
    return new String[][] {keys.toArray(String[]::new), args.toArray(String[]::new)};
  }
}
