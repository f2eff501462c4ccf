package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code decisionLog.file}: the rotating file the replay reads. */
class DecisionLogFileConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      """;

  @Test
  void absent_noFile() {
    assertThat(ConfigLoader.parse(BASE).decisionLog().file().enabled()).isFalse();
  }

  @Test
  void read_andWrittenBackTheSame() {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                decisionLog:
                  file: {path: /var/log/sluice/decisions.jsonl, maxBytes: 64MiB, maxAge: 30m, maxFiles: 48}
                """);
    DecisionLogFile f = c.decisionLog().file();
    assertThat(f)
        .isEqualTo(
            new DecisionLogFile(
                "/var/log/sluice/decisions.jsonl", 64L << 20, Duration.ofMinutes(30), 48));
    String yaml = ConfigWriter.tree(c).toString();
    assertThat(ConfigLoader.parse(yaml).decisionLog().file()).isEqualTo(f);
  }

  @Test
  void badValues_nameTheirField() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        decisionLog:
                          file: {path: "", maxBytes: 10, maxAge: 0.5s, maxFiles: 0, rotate: yes}
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e ->
                assertThat(((ConfigException) e).errors())
                    .anyMatch(s -> s.startsWith("decisionLog.file.path: "))
                    .anyMatch(s -> s.startsWith("decisionLog.file.maxBytes: 10"))
                    .anyMatch(s -> s.startsWith("decisionLog.file.maxAge: "))
                    .anyMatch(s -> s.startsWith("decisionLog.file.maxFiles: 0"))
                    .anyMatch(s -> s.contains("decisionLog.file.rotate")));
  }
}
