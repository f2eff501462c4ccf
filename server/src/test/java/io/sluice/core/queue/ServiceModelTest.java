package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class ServiceModelTest {
  private static final long MS = 1_000_000L;

  @Test
  void separatesPrefillFromDecode() {
    ServiceModel m = new ServiceModel(1000, 20);
    for (int i = 0; i < 200; i++) {
      long input = 100 + (i % 7) * 500; // 100..3100
      long output = 50 + (i % 5) * 150; // 50..650, independent of input
      m.onSample(input, output, input * MS / 5 + output * 10 * MS); // 0.2 ms + 10 ms
      assertThat(m.ready()).isEqualTo(i + 1 >= 20);
    }
    assertThat(m.nanosPerInputToken()).isCloseTo(0.2 * MS, within(1.0));
    assertThat(m.nanosPerOutputToken()).isCloseTo(10.0 * MS, within(10.0));
    // a long prompt is not slow for its work units: 20,000 in + 100 out = 4 s + 1 s
    assertThat(m.predictNanos(20_000, 100)).isCloseTo(5_000.0 * MS, within(1e3));
  }

  @Test
  void sameShapeEveryTime_onePerTokenRate() {
    ServiceModel m = new ServiceModel(100, 5);
    for (int i = 0; i < 10; i++) {
      m.onSample(300, 100, 400 * MS); // cannot tell input from output: 1 ms per token
    }
    assertThat(m.nanosPerInputToken()).isCloseTo(1.0 * MS, within(1.0));
    assertThat(m.nanosPerOutputToken()).isCloseTo(1.0 * MS, within(1.0));
    assertThat(m.ready()).isTrue();
  }

  @Test
  void coefficientsStayNonNegative() {
    ServiceModel m = new ServiceModel(1000, 1);
    // time falls as input grows (and output is fixed): the input coefficient would be negative
    for (int i = 0; i < 50; i++) {
      long input = 100 + i * 10;
      m.onSample(input, 100, (2000 - input) * MS);
    }
    assertThat(m.nanosPerInputToken()).isZero();
    assertThat(m.nanosPerOutputToken()).isPositive();
  }

  @Test
  void unknownTokensOrNoTime_ignored() {
    ServiceModel m = new ServiceModel(100, 1);
    m.onSample(-1, 10, MS);
    m.onSample(10, -1, MS);
    m.onSample(0, 0, MS);
    m.onSample(10, 10, 0);
    assertThat(m.ready()).isFalse();
    assertThat(m.predictNanos(100, 100)).isZero();
  }
}
