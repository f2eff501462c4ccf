package io.sluice.core.estimate;

/** STUB. */
public final class EstimatorSettings {
  public static EstimatorSettings defaults() {
    return new EstimatorSettings();
  }
}
