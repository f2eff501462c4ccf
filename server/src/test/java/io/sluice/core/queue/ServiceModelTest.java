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

  @Test
  void separatesTheFixedTermFromThePerTokenTerms() {
    ServiceModel m = new ServiceModel(1000, 20);
    for (int i = 0; i < 200; i++) {
      long input = 100 + (i % 7) * 500;
      long output = 50 + (i % 5) * 150;
      // 400 ms to the first token, 0.2 ms per prompt token, 10 ms per output token
      m.onSample(input, output, 400 * MS + input * MS / 5 + output * 10 * MS);
    }
    assertThat(m.fixedNanos()).isCloseTo(400.0 * MS, within(1e3));
    assertThat(m.nanosPerInputToken()).isCloseTo(0.2 * MS, within(1.0));
    assertThat(m.nanosPerOutputToken()).isCloseTo(10.0 * MS, within(10.0));
  }

  @Test
  void fixedTermKeptNonNegative() {
    ServiceModel m = new ServiceModel(1000, 1);
    // the least-squares intercept would be -200 ms: it is dropped, the rest refitted
    for (int i = 0; i < 50; i++) {
      long output = 100 + (i % 10) * 100;
      m.onSample(100, output, output * 10 * MS - 200 * MS);
    }
    assertThat(m.fixedNanos()).isZero();
    assertThat(m.nanosPerOutputToken()).isPositive();
    assertThat(m.nanosPerInputToken()).isGreaterThanOrEqualTo(0);
  }

  @Test
  void shortAnswersOnly_aLongReserveIsBeyondTheEvidence_andPredictedAtItsEdge() {
    ServiceModel m = new ServiceModel(200, 20);
    for (int i = 0; i < 40; i++) {
      m.onSample(100 + (i % 5) * 50, 100, (1500 + (i % 7) * 100) * MS);
    }
    assertThat(m.ready()).isTrue();
    assertThat(m.maxOutputSeen()).isEqualTo(100);
    assertThat(m.maxInputSeen()).isEqualTo(300);
    assertThat(m.beyondEvidence(200, 200)).isFalse();
    assertThat(m.beyondEvidence(200, 4000)).isTrue();
    assertThat(m.beyondEvidence(700, 100)).isTrue();
    assertThat(m.predictWithinEvidenceNanos(200, 4000)).isEqualTo(m.predictNanos(200, 200));
    assertThat(m.predictWithinEvidenceNanos(5000, 4000)).isEqualTo(m.predictNanos(600, 200));
    assertThat(m.predictWithinEvidenceNanos(200, 150)).isEqualTo(m.predictNanos(200, 150));
    // once one long answer was seen, the evidence covers it
    m.onSample(200, 4000, 3000 * MS);
    assertThat(m.beyondEvidence(200, 4000)).isFalse();
    assertThat(m.predictWithinEvidenceNanos(200, 4000)).isEqualTo(m.predictNanos(200, 4000));
  }

  @Test
  void oneLongAnswer_teachesTheFixedTerm() {
    ServiceModel m = new ServiceModel(200, 20);
    for (int i = 0; i < 40; i++) {
      m.onSample(100 + (i % 5) * 50, 100, (1500 + (i % 7) * 100) * MS);
    }
    m.onSample(200, 4000, 3000 * MS); // a long reserve, a short answer
    // the fit now sees the reserve barely matters: a 4,000-token reserve is predicted ≈ 3 s
    assertThat(m.fixedNanos()).isPositive();
    assertThat(m.predictNanos(200, 4000)).isBetween(2000.0 * MS, 4000.0 * MS);
  }
}
