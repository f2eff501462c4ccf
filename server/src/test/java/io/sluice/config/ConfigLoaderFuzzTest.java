package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.sluice.bootstrap.Controllers;
import io.sluice.routing.RequestResolver;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Timeout;

/**
 * Coverage-guided: the policy loader on any text. Every input gives either a config that the server
 * can build its request path from (resolver, admission controller), or a {@link ConfigException}
 * whose every error names a field and the expected value ({@code path: value (expected: ...)}, or
 * {@code (document): not valid YAML ...}); never another exception. A hang is a finding too: while
 * fuzzing, the {@link Timeout} becomes Jazzer's per-input timeout. Seeds: {@code
 * ConfigLoaderFuzzTestInputs/configOrConfigException/} (docs/testing.md).
 */
class ConfigLoaderFuzzTest {
  /** A field (a YAML path or a key name) first, then what was expected. */
  private static final Pattern NAMES_A_FIELD =
      Pattern.compile("(?s)^(\\(document\\)|[^\\s:(][^\\n]*?): .*(expected|not valid YAML).*");

  @FuzzTest(maxDuration = "2m")
  @Timeout(10)
  void configOrConfigException(byte[] input) {
    String yaml = new String(input, StandardCharsets.UTF_8);
    SluiceConfig config;
    try {
      config = ConfigLoader.parse(yaml);
    } catch (ConfigException e) {
      assertThat(e.errors()).isNotEmpty();
      for (String error : e.errors()) {
        assertThat(error).as("names a field and the expected value").matches(NAMES_A_FIELD);
      }
      return;
    }
    // a config that validates is one the server can start from
    new RequestResolver(config);
    Controllers.forPolicy(config, Math::random);
  }
}
