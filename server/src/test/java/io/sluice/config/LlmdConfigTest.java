package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code llmD} section: InferenceObjective names and priorities to classes. */
class LlmdConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes:
        interactive: {rank: 0, reservedShare: 0.5}
        standard: {rank: 1, reservedShare: 0.3}
        batch: {rank: 2, reservedShare: 0.2}
      """;

  @Test
  void absent_mapsNothing_andWritesNoHeader() {
    LlmdInterop l = ConfigLoader.parse(BASE).section(LlmdSection.SECTION);
    assertThat(l).isEqualTo(LlmdInterop.DEFAULTS);
    assertThat(l.classOf("premium")).isNull();
    assertThat(l.droppedReasonHeader()).isFalse();
  }

  @Test
  void objectives_byNameAndByPriority_resolveToClasses_andWriteBackTheSame() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                llmD:
                  priorityClasses: {interactive: 50, standard: 0, batch: -1000}
                  objectives:
                    premium-traffic: {priority: 100}
                    default: {priority: 0}
                    sheddable: {priority: -1}
                    very-sheddable: {priority: -5000}
                    nightly: batch
                  droppedReasonHeader: true
                """);
    LlmdInterop l = c.section(LlmdSection.SECTION);
    assertThat(l.objectiveClasses())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "premium-traffic", "interactive",
                "default", "standard",
                "sheddable", "batch",
                // below every minimum: the most sheddable class
                "very-sheddable", "batch",
                "nightly", "batch"));
    assertThat(l.droppedReasonHeader()).isTrue();
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(LlmdSection.SECTION)).isEqualTo(l);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        llmD:
                          priorityClasses: {gold: 10, standard: high}
                          objectives:
                            a: platinum
                            b: {priority: 1.5}
                            c: {weight: 3}
                          droppedReasonHeader: maybe
                          extra: 1
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e ->
                assertThat(((ConfigException) e).errors())
                    .anyMatch(m -> m.startsWith("llmD.priorityClasses.gold: gold (expected: the"))
                    .anyMatch(m -> m.startsWith("llmD.priorityClasses.standard:"))
                    .anyMatch(m -> m.startsWith("llmD.objectives.a: platinum (expected:"))
                    .anyMatch(m -> m.startsWith("llmD.objectives.b:"))
                    .anyMatch(m -> m.startsWith("llmD.objectives.c"))
                    .anyMatch(m -> m.startsWith("llmD.droppedReasonHeader"))
                    .anyMatch(m -> m.startsWith("llmD") && m.contains("extra")));
  }

  @Test
  void priorityObjective_withoutPriorityClasses_isAnErrorSayingWhatIsMissing() {
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "llmD: {objectives: {p: {priority: 10}}}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("llmD.objectives.p.priority: 10 (expected:")
        .hasMessageContaining("llmD.priorityClasses");
  }

  @Test
  void classForPriority_highestMinimumAtOrBelow_elseTheLowest() {
    Map<String, Integer> m = Map.of("hi", 10, "mid", 0, "lo", -10);
    assertThat(LlmdInterop.classForPriority(m, 10)).isEqualTo("hi");
    assertThat(LlmdInterop.classForPriority(m, 9)).isEqualTo("mid");
    assertThat(LlmdInterop.classForPriority(m, -10)).isEqualTo("lo");
    assertThat(LlmdInterop.classForPriority(m, Integer.MIN_VALUE)).isEqualTo("lo");
    assertThat(LlmdInterop.classForPriority(Map.of(), 5)).isNull();
  }
}
