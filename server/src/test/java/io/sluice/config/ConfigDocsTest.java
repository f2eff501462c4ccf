package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The example in docs/configuration.md must stay a valid policy. */
class ConfigDocsTest {
  @Test
  void configurationDocExample_isValid() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "configuration.md"));
    int at = doc.indexOf("## Example");
    assertThat(at).isPositive();
    int start = doc.indexOf("```yaml", at) + "```yaml".length();
    int end = doc.indexOf("```", start);
    SluiceConfig c = ConfigLoader.parse(doc.substring(start, end));
    assertThat(c.pools()).containsKey("llama-70b");
    assertThat(c.unmatched().reject()).isTrue();
  }
}
