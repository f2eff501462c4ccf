package io.sluice.config;

import java.util.Locale;
import java.util.Set;

/** The {@code decisionLog} section: the structured admission record's level, sampling, bounds. */
final class DecisionLogSection {
  private DecisionLogSection() {}

  static SluiceConfig.DecisionLog read(Node n) {
    SluiceConfig.DecisionLog d = SluiceConfig.DecisionLog.DEFAULTS;
    Node dl =
        n.only(
            Set.of(
                "enabled",
                "level",
                "sampleRate",
                "alwaysLogRejects",
                "maxAdmittedPerSecond",
                "maxRefusedPerSecond"));
    String name = dl.get("level").string(d.level().configName()).toLowerCase(Locale.ROOT);
    SluiceConfig.DecisionLog.Level level = d.level();
    for (SluiceConfig.DecisionLog.Level l : SluiceConfig.DecisionLog.Level.values()) {
      if (l.configName().equals(name)) {
        level = l;
      }
    }
    if (!level.configName().equals(name)) {
      dl.get("level").invalid(name, "one of trace, debug, info, warn");
    }
    return new SluiceConfig.DecisionLog(
        dl.get("enabled").bool(d.enabled()),
        level,
        dl.get("sampleRate").doubleValue(d.sampleRate(), 0.0, 1.0),
        dl.get("alwaysLogRejects").bool(d.alwaysLogRejects()),
        dl.get("maxAdmittedPerSecond").intValue(d.maxAdmittedPerSecond(), 0, 1_000_000),
        dl.get("maxRefusedPerSecond").intValue(d.maxRefusedPerSecond(), 0, 1_000_000));
  }
}
