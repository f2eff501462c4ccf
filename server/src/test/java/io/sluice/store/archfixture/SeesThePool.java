package io.sluice.store.archfixture;

/** Breaks the stores-see-neither-the-pool-nor-config rule on purpose (test sources only). */
public final class SeesThePool {
  Object pool() {
    return io.sluice.core.admission.PoolState.class;
  }

  Object config() {
    return io.sluice.config.ConfigException.class;
  }
}
