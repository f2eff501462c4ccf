package io.sluice.observability;

import io.sluice.config.DecisionLogFile;
import io.sluice.config.SluiceConfig;

/** Decision log settings for tests: at INFO, no file, no OTLP. */
final class DecisionLogSettings {
  private DecisionLogSettings() {}

  /** Every record (no sampling, no per-second bound). */
  static SluiceConfig.DecisionLog every() {
    return of(true, 1.0, true, 0, 0);
  }

  static SluiceConfig.DecisionLog of(
      boolean enabled,
      double sampleRate,
      boolean alwaysLogRejects,
      int maxAdmittedPerSecond,
      int maxRefusedPerSecond) {
    return new SluiceConfig.DecisionLog(
        enabled,
        SluiceConfig.DecisionLog.Level.INFO,
        sampleRate,
        alwaysLogRejects,
        maxAdmittedPerSecond,
        maxRefusedPerSecond,
        DecisionLogFile.NONE,
        false);
  }
}
