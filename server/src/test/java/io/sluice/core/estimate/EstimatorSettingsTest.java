package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class EstimatorSettingsTest {

  @Test
  void defaults_documentedValues() {
    EstimatorSettings s = EstimatorSettings.defaults();

    assertThat(s.bytesPerToken()).isEqualTo(4.0);
    assertThat(s.imageTokens()).isEqualTo(765);
    assertThat(s.toolDefinitionOverheadTokens()).isEqualTo(10);
    assertThat(s.perMessageOverheadTokens()).isEqualTo(4);
    assertThat(s.maxJsonDepth()).isEqualTo(64);
    assertThat(s.toBuilder().build().toString()).isEqualTo(s.toString());
  }

  @Test
  void builder_invalidValues_throwFieldValueExpected() {
    assertThatThrownBy(() -> EstimatorSettings.builder().bytesPerToken(0))
        .hasMessage("bytesPerToken: 0.0 (expected: 0.5 <= value <= 64)");
    assertThatThrownBy(() -> EstimatorSettings.builder().bytesPerToken(Double.NaN))
        .hasMessageStartingWith("bytesPerToken: NaN");
    assertThatThrownBy(() -> EstimatorSettings.builder().imageTokens(-1))
        .hasMessage("imageTokens: -1 (expected: >= 0)");
    assertThatThrownBy(() -> EstimatorSettings.builder().maxJsonDepth(0))
        .hasMessage("maxJsonDepth: 0 (expected: 1 <= value <= 512)");
    assertThatThrownBy(() -> EstimatorSettings.builder().maxTokenizeChars(-1))
        .hasMessage("maxTokenizeChars: -1 (expected: >= 0)");
  }

  @Test
  void estimateLimits_invalid_throwFieldValueExpected() {
    assertThatThrownBy(() -> new EstimateLimits(-1, 10))
        .hasMessage("defaultOutputTokens: -1 (expected: >= 0)");
    assertThatThrownBy(() -> new EstimateLimits(0, -1))
        .hasMessage("maxOutputTokens: -1 (expected: >= 0)");
    assertThatThrownBy(() -> new EstimateLimits(11, 10))
        .hasMessage("defaultOutputTokens: 11 (expected: <= maxOutputTokens 10)");
    assertThat(new EstimateLimits(10, 10).maxOutputTokens()).isEqualTo(10);
  }
}
