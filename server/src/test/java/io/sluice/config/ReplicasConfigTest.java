package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.share.ReplicaPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The {@code replicas} section: defaults, per-pool modes, and errors that name field and value. */
class ReplicasConfigTest {
  private static final String BASE =
      """
      pools: {gpu: {capacity: 1000, maxRequests: 8}, premium: {capacity: 100}}
      classes: {interactive: {reservedShare: 1.0}}
      """;

  @Test
  void defaults_whenTheSectionIsAbsent() {
    ReplicaPolicy p = ConfigLoader.parse(BASE).replicas();
    assertThat(p).isEqualTo(ReplicaPolicy.DEFAULT);
    assertThat(p.mode("gpu").storeDown()).isEqualTo(ReplicaPolicy.StoreDown.FALLBACK);
    assertThat(p.mode("gpu").keepShareFor()).isEqualTo(Duration.ofMillis(800));
  }

  @Test
  void perPoolModes_overrideTheDefaults() {
    ReplicaPolicy p =
        ConfigLoader.parse(
                BASE
                    + """
                    replicas:
                      leaseTtl: 4s
                      renewInterval: 250ms
                      expectedReplicas: 6
                      floor: 0.05
                      pools:
                        premium: {storeDown: refuse, keepShareFor: 1s}
                    """)
            .replicas();
    assertThat(p.leaseTtl()).isEqualTo(Duration.ofSeconds(4));
    assertThat(p.renewInterval()).isEqualTo(Duration.ofMillis(250));
    assertThat(p.mode("gpu").expectedReplicas()).isEqualTo(6);
    assertThat(p.mode("gpu").storeDown()).isEqualTo(ReplicaPolicy.StoreDown.FALLBACK);
    ReplicaPolicy.PoolMode premium = p.mode("premium");
    assertThat(premium.storeDown()).isEqualTo(ReplicaPolicy.StoreDown.REFUSE);
    assertThat(premium.keepShareFor()).isEqualTo(Duration.ofSeconds(1));
    assertThat(premium.expectedReplicas()).as("inherits the section's default").isEqualTo(6);
    assertThat(premium.floor()).isEqualTo(0.05);
  }

  @Test
  void errors_nameTheFieldAndTheExpectedValue() {
    String yaml =
        BASE
            + """
            replicas:
              leaseTtl: 1s
              renewInterval: 800ms
              keepShareFor: 3s
              storeDown: panic
              expectedReplicas: 0
              floor: 0.9
              pools:
                nosuch: {storeDown: refuse}
            """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .anyMatch(
                        s -> s.startsWith("replicas.renewInterval: 800ms") && s.contains("half"))
                    .anyMatch(
                        s ->
                            s.startsWith("replicas.keepShareFor: 3s")
                                && s.contains("up to replicas.leaseTtl (1s)"))
                    .anyMatch(s -> s.startsWith("replicas.storeDown: ") && s.contains("refuse"))
                    .anyMatch(s -> s.startsWith("replicas.expectedReplicas: 0"))
                    .anyMatch(s -> s.startsWith("replicas.floor: 0.9"))
                    .anyMatch(
                        s ->
                            s.startsWith("replicas.pools.nosuch: no such pool")
                                && s.contains("gpu")));
  }

  @Test
  void theEffectiveConfig_printsTheSectionBackAsItWasRead() {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                replicas: {leaseTtl: 4s, pools: {premium: {storeDown: refuse}}}
                """);
    String printed = ConfigWriter.tree(c).toString(); // JSON is YAML
    assertThat(ConfigLoader.parse(printed).replicas()).isEqualTo(c.replicas());
  }
}
