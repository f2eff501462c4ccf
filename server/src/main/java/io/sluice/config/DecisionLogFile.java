package io.sluice.config;

import java.time.Duration;

/**
 * {@code decisionLog.file}: the records also written to a rotating file of JSON lines (the replay's
 * input, docs/replay.md). A file is rolled when it reaches {@code maxBytes} or is {@code maxAge}
 * old; at most {@code maxFiles} rolled files are kept beside the current one.
 *
 * @param path the current file ("" = no file)
 * @param maxBytes the size at which the file is rolled
 * @param maxAge the age at which the file is rolled
 * @param maxFiles rolled files kept
 */
public record DecisionLogFile(String path, long maxBytes, Duration maxAge, int maxFiles) {
  /** No file: records go to the logger only. */
  public static final DecisionLogFile NONE =
      new DecisionLogFile("", 100L << 20, Duration.ofHours(1), 24);

  /** Whether records go to a file. */
  public boolean enabled() {
    return !path.isEmpty();
  }
}
