package io.sluice.feature;

import io.sluice.config.SluiceConfig;
import io.sluice.core.time.Ticker;
import io.sluice.observability.AdmissionMetrics;

/**
 * What a feature builds one snapshot's part on ({@link Feature#contribute}).
 *
 * @param config the snapshot's policy (a registered section: {@code config.section(...)})
 * @param stores the process's store ports
 * @param metrics the process's metrics (a feature's own meters: {@link AdmissionMetrics#part})
 * @param ticker the process's ticker (durations, deadlines)
 * @param clock the process's wall clock (calendar windows, expiry times, records)
 * @param env the process environment, where a feature reads its secrets (never logged or shown)
 */
public record FeatureSnapshot(
    SluiceConfig config,
    StorePorts stores,
    AdmissionMetrics metrics,
    Ticker ticker,
    java.time.Clock clock,
    java.util.Map<String, String> env) {
  public FeatureSnapshot {
    env = java.util.Map.copyOf(env);
  }
}
