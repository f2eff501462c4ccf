package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class LogQuantileTest {

  @Test
  void warmup_exactQuantileOfTheFirstSamples() {
    LogQuantile q = new LogQuantile(0.9, 0.1, 20);
    for (int i = 1; i <= 19; i++) {
      q.onSample(i);
      assertThat(q.ready()).isFalse();
      assertThat(q.value()).isNaN();
    }
    q.onSample(20);
    assertThat(q.ready()).isTrue();
    assertThat(q.value()).isCloseTo(18.0, within(1e-9)); // ceil(0.9 × 20) = 18th smallest
  }

  @Test
  void converges_toTheQuantileOfAUniformSequence_andFollowsAShift() {
    LogQuantile q = new LogQuantile(0.9, 0.05, 20);
    for (int i = 0; i < 20_000; i++) {
      q.onSample(1 + (i * 37) % 100); // 1..100 in a scrambled cycle
    }
    assertThat(q.value()).isBetween(80.0, 97.0);
    for (int i = 0; i < 20_000; i++) {
      q.onSample(2 * (1 + (i * 37) % 100));
    }
    assertThat(q.value()).isBetween(160.0, 194.0);
  }

  @Test
  void censoredSamples_raiseTheEstimateOnlyWhenAboveIt() {
    LogQuantile q = new LogQuantile(0.9, 0.1, 1);
    q.onAtLeast(100); // before warm-up: ignored
    assertThat(q.ready()).isFalse();
    q.onSample(10);
    q.onAtLeast(5); // below the estimate: says nothing
    assertThat(q.value()).isCloseTo(10.0, within(1e-9));
    q.onAtLeast(50); // the true value is above 10: move up by step × q in log space
    assertThat(q.value()).isCloseTo(10 * Math.exp(0.09), within(1e-9));
  }

  @Test
  void ignoresNonPositiveAndInfinite_rejectsBadSettings() {
    LogQuantile q = new LogQuantile(0.5, 0.1, 1);
    q.onSample(0);
    q.onSample(-1);
    q.onSample(Double.POSITIVE_INFINITY);
    q.onSample(Double.NaN);
    assertThat(q.ready()).isFalse();
    assertThatThrownBy(() -> new LogQuantile(1.0, 0.1, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new LogQuantile(0.9, 0, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new LogQuantile(0.9, 0.1, 0))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void logSamples_moveTwoTailsExactlyAsTheirValuesWould() {
    LogQuantile byValue = new LogQuantile(0.5, 0.05, 10);
    LogQuantile byLog = new LogQuantile(0.5, 0.05, 10);
    double[] values = {3.5, 0, -2, Double.POSITIVE_INFINITY, Double.NaN, 7, 1e-9, 12.25, 1e12};
    for (int i = 0; i < 200; i++) {
      double v = values[i % values.length] * (1 + (i * 31) % 17);
      byValue.onSample(v);
      byLog.onLogSample(LogQuantile.logOf(v));
      assertThat(byLog.ready()).isEqualTo(byValue.ready());
      // bit for bit: one log shared by two tails learns what each would have on its own
      assertThat(Double.doubleToRawLongBits(byLog.value()))
          .isEqualTo(Double.doubleToRawLongBits(byValue.value()));
    }
    assertThat(byLog.ready()).isTrue();
  }

  @Test
  void logOf_isNaNForWhatASampleIgnores() {
    assertThat(LogQuantile.logOf(0)).isNaN();
    assertThat(LogQuantile.logOf(-1)).isNaN();
    assertThat(LogQuantile.logOf(Double.NaN)).isNaN();
    assertThat(LogQuantile.logOf(Double.POSITIVE_INFINITY)).isNaN();
    assertThat(LogQuantile.logOf(Math.E)).isEqualTo(Math.log(Math.E));
  }
}
