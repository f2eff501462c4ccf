package io.sluice.core.share;

import java.util.Map;

/**
 * The class side of a replica's share ({@link SharedPool#applyShare}).
 *
 * @param peers the other replicas' work and requests in flight by class, as of their last renewal
 * @param idle by class, the part of the class's guarantee placed on this replica that it did not
 *     want at the last renewal: kept here for that class
 */
public record ClassShares(Map<String, Load> peers, Map<String, Load> idle) {
  public ClassShares {
    peers = Map.copyOf(peers);
    idle = Map.copyOf(idle);
  }
}
