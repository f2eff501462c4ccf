package io.sluice.core.estimate;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Where the replicas of a deployment keep the learned output reserve (Redis: one hash per key and
 * an index, {@code reserve_publish.lua}; in memory for replicas in one process). One exchange adds
 * each replica's additions since its last exchange to the stored keys and answers every key written
 * since the replica last asked, so a new replica (or one restarted) reads what the others learned
 * and does not start cold. The rule the store applies ({@link #decay}):
 *
 * <ul>
 *   <li>a key's stored fields decay by half every {@code windowMillis} of the store's clock, then
 *       the additions are added (answers of the last window weigh most; the state of a quiet key
 *       fades rather than holds forever);
 *   <li>a key not written for {@code 2 × windowMillis} is forgotten;
 *   <li>at most {@code maxKeys} keys are kept, the least recently written forgotten first.
 * </ul>
 */
public interface ReserveStore {
  /**
   * Adds {@code additions} and answers the keys of {@code pools} written since {@code sinceMillis}
   * (the store's clock, as a previous {@link Pull#nowMillis()}; 0: every key), decayed to now.
   * Additions to keys of other pools are stored too.
   *
   * @param maxKeys keys kept per pool
   */
  CompletionStage<Pull> exchange(
      String namespace,
      java.util.Collection<String> pools,
      List<ReserveSnapshot> additions,
      long sinceMillis,
      long windowMillis,
      int maxKeys);

  /** What an exchange answers: the store's clock, and the keys written since the asked time. */
  record Pull(long nowMillis, List<ReserveSnapshot> changed) {}

  /** The factor a state written {@code ageMillis} ago is multiplied by: {@code 2^(−age/window)}. */
  static double decay(long ageMillis, long windowMillis) {
    return Math.pow(0.5, Math.max(0, ageMillis) / (double) Math.max(1, windowMillis));
  }
}
