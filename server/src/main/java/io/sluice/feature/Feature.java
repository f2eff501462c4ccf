package io.sluice.feature;

import java.util.List;

/**
 * One feature's participation in the server, in one place: the store ports it keeps shared state in
 * (built once per process, on the backend), and what it adds to each config snapshot's runtime
 * ({@link #contribute}: its check, at its place in the chain; its listeners; its decision-record
 * fields). Its policy section is a {@link io.sluice.config.ConfigSection}, read with {@code
 * snapshot.config().section(...)}. Registered in the bootstrap's list of features (CONTRIBUTING.md,
 * "Adding a feature module").
 */
public interface Feature {
  /** The store ports this feature keeps its state in (none by default). */
  default List<StorePort<?>> storePorts() {
    return List.of();
  }

  /**
   * What the feature adds to the runtime of {@code snapshot}'s config: called once per snapshot
   * (start, each reload, the warm-up's own).
   */
  void contribute(FeatureSnapshot snapshot, Contributions out);
}
