package io.sluice.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.netty.shaded.io.netty.util.ResourceLeakDetector;
import io.grpc.netty.shaded.io.netty.util.ResourceLeakDetector.Level;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LeakSamplingTest {
  private final Level before = ResourceLeakDetector.getLevel();

  @AfterEach
  void restore() {
    ResourceLeakDetector.setLevel(before);
  }

  @Test
  void noPropertySet_turnsTheSamplingOff() {
    ResourceLeakDetector.setLevel(Level.SIMPLE);

    assertThat(LeakSampling.apply(Map.<String, String>of()::get)).isEqualTo(Level.DISABLED);
    assertThat(ResourceLeakDetector.getLevel()).isEqualTo(Level.DISABLED);
  }

  @Test
  void theOperatorsLevel_isLeftAsNettyReadIt_underEitherSpelling() {
    ResourceLeakDetector.setLevel(Level.PARANOID);
    assertThat(LeakSampling.apply(Map.of(LeakSampling.LEVEL_PROPERTY, "paranoid")::get))
        .isEqualTo(Level.PARANOID);

    ResourceLeakDetector.setLevel(Level.ADVANCED);
    assertThat(LeakSampling.apply(Map.of(LeakSampling.LEGACY_PROPERTY, "advanced")::get))
        .isEqualTo(Level.ADVANCED);
  }

  @Test
  void theTestJvm_keepsSampling_asThePomAsks() {
    // surefire sets the property (pom.xml): a server started by a test leaves the level alone
    assertThat(System.getProperty(LeakSampling.LEVEL_PROPERTY)).isEqualTo("simple");
    assertThat(LeakSampling.apply()).isEqualTo(ResourceLeakDetector.getLevel());
  }
}
