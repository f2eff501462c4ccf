package io.sluice.core.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class EnginePriorityTest {
  private static EnginePriority preset(EnginePriority.Preset p) {
    return new EnginePriority(p, "priority", null, Map.of());
  }

  @Test
  void vllm_lowerIsMoreUrgent_theRank() {
    EnginePriority ep = preset(EnginePriority.Preset.VLLM);
    assertThat(ep.valueFor("interactive", 0, 2, "pro")).isEqualTo("0");
    assertThat(ep.valueFor("agent", 1, 2, "pro")).isEqualTo("1");
    assertThat(ep.valueFor("batch", 2, 2, "pro")).isEqualTo("2");
  }

  @Test
  void sglang_higherIsMoreUrgent() {
    EnginePriority ep = preset(EnginePriority.Preset.SGLANG);
    assertThat(ep.valueFor("interactive", 0, 2, "pro")).isEqualTo("2");
    assertThat(ep.valueFor("batch", 2, 2, "pro")).isEqualTo("0");
  }

  @Test
  void tensorrt_aFloatIn01_higherIsMoreUrgent() {
    EnginePriority ep = preset(EnginePriority.Preset.TENSORRT_LLM);
    assertThat(ep.valueFor("interactive", 0, 2, "pro")).isEqualTo("1");
    assertThat(ep.valueFor("agent", 1, 2, "pro")).isEqualTo("0.667");
    assertThat(ep.valueFor("batch", 2, 2, "pro")).isEqualTo("0.333");
    for (int rank = 0; rank <= 9; rank++) {
      double v = Double.parseDouble(ep.valueFor("c", rank, 9, "t"));
      assertThat(v).isBetween(0.0, 1.0);
    }
  }

  @Test
  void explicitValues_classTierWinsOverClass_overThePreset() {
    EnginePriority ep =
        new EnginePriority(
            EnginePriority.Preset.VLLM,
            "priority",
            null,
            Map.of("interactive", "-5", "interactive/gold", "-10"));
    assertThat(ep.valueFor("interactive", 0, 1, "gold")).isEqualTo("-10");
    assertThat(ep.valueFor("interactive", 0, 1, "free")).isEqualTo("-5");
    assertThat(ep.valueFor("batch", 1, 1, "free")).isEqualTo("1");
    EnginePriority only =
        new EnginePriority(EnginePriority.Preset.NONE, null, "x-p", Map.of("batch", "3"));
    assertThat(only.valueFor("interactive", 0, 1, "free")).isNull();
    assertThat(only.enabled()).isTrue();
    assertThat(EnginePriority.OFF.enabled()).isFalse();
  }

  @Test
  void aValueThatIsNotANumber_isRefused() {
    assertThatThrownBy(
            () ->
                new EnginePriority(
                    EnginePriority.Preset.NONE, "priority", null, Map.of("batch", "high")))
        .hasMessageContaining("values.batch: high (expected: a number)");
  }
}
