package io.sluice.feature;

/** The process's built store ports ({@link StorePort}), by port. */
public interface StorePorts {
  /** The port as built for this process's backend; throws if it was not registered. */
  <P> P port(StorePort<P> port);
}
