package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import org.junit.jupiter.api.Test;

/** The start-up line that says every pool's service time starts on a guess, and which. */
class ServiceTimeStartLineTest {
  @Test
  void namesEveryPoolAndItsDefaultServiceTime() {
    SluiceConfig config = ConfigLoader.parse(ConfigLoader.embeddedDefaultYaml());
    String line = StartupLines.serviceTimeStartLine(config);
    assertThat(line).startsWith("service times: every pool starts on a guess");
    for (var pool : config.pools().values()) {
      assertThat(line).contains(pool.name() + " " + pool.defaultServiceTime().toMillis() + " ms");
    }
    assertThat(line).contains("sluice_pool_service_time_source");
  }
}
