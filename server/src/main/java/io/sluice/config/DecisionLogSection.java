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
                "maxRefusedPerSecond",
                "file",
                "otlp"));
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
        dl.get("maxRefusedPerSecond").intValue(d.maxRefusedPerSecond(), 0, 1_000_000),
        file(dl.get("file")),
        dl.get("otlp").bool(d.otlp()));
  }

  /** {@code decisionLog.file}: a rotating file of JSON lines, bounded in size, age and count. */
  private static DecisionLogFile file(Node n) {
    DecisionLogFile d = DecisionLogFile.NONE;
    if (!n.present()) {
      return d;
    }
    Node f = n.only(Set.of("path", "maxBytes", "maxAge", "maxFiles"));
    String path = f.get("path").string(d.path()).trim();
    if (path.isEmpty()) {
      f.get("path").invalid("\"" + path + "\"", "a file path: decisionLog.file needs one");
    }
    long maxBytes = f.get("maxBytes").bytes(d.maxBytes());
    if (maxBytes < 4096) {
      f.get("maxBytes").invalid(String.valueOf(maxBytes), "a size of at least 4KiB");
      maxBytes = d.maxBytes();
    }
    java.time.Duration maxAge = f.get("maxAge").duration(d.maxAge());
    if (maxAge.compareTo(java.time.Duration.ofSeconds(1)) < 0) {
      f.get("maxAge").invalid(maxAge.toString(), "a duration of at least 1s");
      maxAge = d.maxAge();
    }
    return new DecisionLogFile(
        path, maxBytes, maxAge, f.get("maxFiles").intValue(d.maxFiles(), 1, 10_000));
  }
}
