package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigException;
import java.util.Random;
import org.junit.jupiter.api.Test;

class MixTest {

  private static ConfigException errors(String yaml) {
    try {
      Mix.parse(yaml);
    } catch (ConfigException e) {
      return e;
    }
    throw new AssertionError("expected errors for:\n" + yaml);
  }

  @Test
  void embeddedDefault_parses() {
    Mix m = Mix.embeddedDefault();
    assertThat(m.entries()).hasSize(3);
    assertThat(m.meanPromptTokens()).isEqualTo((6 * 400 + 3 * 1500 + 3000) / 10.0);
    assertThat(m.meanMaxTokens()).isEqualTo((6 * 128 + 3 * 256 + 512) / 10.0);
    assertThat(m.describe())
        .isEqualTo(
            "3 kinds: 60% 400 prompt + 128 max output, 30% 1500 prompt + 256 max output,"
                + " 10% 3000 prompt + 512 max output");
  }

  @Test
  void weight_defaultsToOne_andDrawsFollowTheWeights() {
    Mix m =
        Mix.parse(
            "requests:\n  - {promptTokens: 10, maxTokens: 5}\n  - {weight: 3, promptTokens: 20, maxTokens: 5}\n");
    Random r = new Random(7);
    int heavy = 0;
    for (int i = 0; i < 4000; i++) {
      if (m.pick(r).promptTokens() == 20) {
        heavy++;
      }
    }
    assertThat(heavy).isBetween(2800, 3200);
  }

  @Test
  void deck_holdsTheMixInProportion_byLargestRemainder() {
    Mix m =
        Mix.parse(
            "requests:\n  - {weight: 3, promptTokens: 1, maxTokens: 1}\n  - {weight: 1, promptTokens: 2, maxTokens: 1}\n  - {weight: 1, promptTokens: 3, maxTokens: 1}\n");
    java.util.List<Mix.Entry> deck = m.deck(12, new Random(1));
    assertThat(deck).hasSize(12);
    // 7.2, 2.4, 2.4: 7, 2, 2, and the largest remainder (0.4, the first of the two) gets the last
    assertThat(deck.stream().filter(e -> e.promptTokens() == 1)).hasSize(7);
    assertThat(deck.stream().filter(e -> e.promptTokens() == 2)).hasSize(3);
    assertThat(deck.stream().filter(e -> e.promptTokens() == 3)).hasSize(2);
    assertThat(m.deck(64, new Random(2)).stream().filter(e -> e.promptTokens() == 1)).hasSize(38);
    assertThat(m.deck(1, new Random(1))).hasSize(1);
  }

  @Test
  void everyErrorNamesItsFieldAndTheExpectedValue() {
    ConfigException e =
        errors(
            "requests:\n"
                + "  - {weight: -1, promptTokens: 0, maxTokens: 16}\n"
                + "  - {weight: 1, promptTokens: 100}\n"
                + "  - {weight: 1, promptTokens: 1.5, maxTokens: 16, temperature: 0.2}\n"
                + "  - 42\n"
                + "model: x\n");
    assertThat(e.errors())
        .containsExactlyInAnyOrder(
            "model: unknown key (expected one of: requests)",
            "requests[0].weight: -1 (expected: a number > 0)",
            "requests[0].promptTokens: 0 (expected: an integer in 1..1000000)",
            "requests[1].maxTokens: missing (expected: an integer in 1..1000000)",
            "requests[2].temperature: unknown key (expected one of: maxTokens, promptTokens, weight)",
            "requests[2].promptTokens: 1.5 (expected: an integer in 1..1000000)",
            "requests[3]: 42 (expected: a mapping {weight, promptTokens, maxTokens})");
  }

  @Test
  void shapeErrors() {
    assertThat(errors("").errors())
        .containsExactly(
            "(document): empty (expected: a mapping with requests: [{weight, promptTokens,"
                + " maxTokens}, ...])");
    assertThat(errors("requests: []").errors())
        .containsExactly("requests: [] (expected: at least one entry)");
    assertThat(errors("requests: {weight: 1}").errors())
        .containsExactly(
            "requests: object (expected: a list of {weight, promptTokens, maxTokens})");
    assertThat(errors("other: 1").errors())
        .containsExactly(
            "other: unknown key (expected one of: requests)",
            "requests: missing (expected: a list of {weight, promptTokens, maxTokens})");
    assertThat(errors("requests: [ {weight: 1").errors().get(0))
        .startsWith("(document): not valid YAML");
  }

  @Test
  void filler_isAboutFourCharactersPerToken_andUniquePerNonce() {
    String a = Mix.filler(500, 1);
    String b = Mix.filler(500, 2);
    assertThat(a.length()).isBetween(1990, 2020);
    assertThat(a).isNotEqualTo(b);
    assertThat(a).startsWith("req 1 ");
    assertThat(Mix.filler(1, 3)).isNotBlank();
  }

  @Test
  void emptyMix_isRefused() {
    assertThatThrownBy(() -> new Mix(java.util.List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("requests: empty");
  }
}
