package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.policy.AdaptivePolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code pools.<name>.adaptive}: defaults, every key read, errors naming the field. */
class AdaptiveConfigTest {
  private static final String CLASSES = "classes: {a: {reservedShare: 1}}\n";

  private static AdaptivePolicy adaptive(String block) {
    return ConfigLoader.parse(
            "pools: {p: {capacity: 64000, maxRequests: 32, adaptive: " + block + "}}\n" + CLASSES)
        .pools()
        .get("p")
        .adaptive();
  }

  @Test
  void offUnlessEnabled() {
    assertThat(
            ConfigLoader.parse("pools: {p: {capacity: 10}}\n" + CLASSES)
                .pools()
                .get("p")
                .adaptive())
        .isEqualTo(AdaptivePolicy.OFF);
    assertThat(adaptive("{enabled: false}")).isEqualTo(AdaptivePolicy.OFF);
    assertThat(ConfigLoader.embeddedDefault().pools().values())
        .allSatisfy(p -> assertThat(p.adaptive().enabled()).isFalse());
  }

  @Test
  void enabledWithDefaults_floorsAreAQuarterOfTheCeiling() {
    AdaptivePolicy a = adaptive("{enabled: true}");
    assertThat(a.enabled()).isTrue();
    assertThat(a.minCapacity()).isEqualTo(16000);
    assertThat(a.minRequests()).isEqualTo(8);
    assertThat(a.interval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(a.growBelow()).isEqualTo(1.1);
    assertThat(a.shrinkAbove()).isEqualTo(1.3);
    assertThat(a.backoff()).isEqualTo(0.7);
    assertThat(a.overloadStatuses()).containsExactlyInAnyOrder(429, 503, 529);
  }

  @Test
  void everyKeyIsRead() {
    AdaptivePolicy a =
        adaptive(
            "{enabled: true, minCapacity: 1000, minRequests: 2, interval: 3s, minSamples: 7,"
                + " latency: {growBelow: 1.05, shrinkAbove: 1.4, baselineWindow: 20m},"
                + " backoff: 0.5, maxPause: 0s, overloadStatuses: [429]}");
    assertThat(a)
        .isEqualTo(
            AdaptivePolicy.builder(1000, 2)
                .interval(Duration.ofSeconds(3))
                .minSamples(7)
                .latency(1.05, 1.4)
                .backoff(0.5)
                .maxPause(Duration.ZERO)
                .baselineWindow(Duration.ofMinutes(20))
                .overloadStatuses(java.util.Set.of(429))
                .build());
  }

  @Test
  void errorsNameTheFieldAndTheExpectedValue() {
    assertThatThrownBy(() -> adaptive("{enabled: true, minCapacity: 100000}"))
        .hasMessageContaining("pools.p.adaptive.minCapacity");
    assertThatThrownBy(() -> adaptive("{enabled: true, minRequests: 33}"))
        .hasMessageContaining("pools.p.adaptive.minRequests");
    assertThatThrownBy(
            () -> adaptive("{enabled: true, latency: {growBelow: 1.5, shrinkAbove: 1.2}}"))
        .hasMessageContaining("pools.p.adaptive.latency")
        .hasMessageContaining("growBelow < shrinkAbove");
    assertThatThrownBy(() -> adaptive("{enabled: true, overloadStatuses: [200]}"))
        .hasMessageContaining("pools.p.adaptive.overloadStatuses")
        .hasMessageContaining("400 .. 599");
    assertThatThrownBy(() -> adaptive("{enabled: true, backoff: 1.5}"))
        .hasMessageContaining("pools.p.adaptive.backoff");
    assertThatThrownBy(() -> adaptive("{enabled: true, minimum: 3}"))
        .hasMessageContaining("pools.p.adaptive.minimum");
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    "pools: {p: {capacity: 100, adaptive: {enabled: true, minRequests: 2}}}\n"
                        + CLASSES))
        .hasMessageContaining("pools.p.adaptive.minRequests");
  }
}
