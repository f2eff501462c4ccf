package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The predicted start window: the pool's rate across replicas, the bounds, no rate yet. */
class StartWindowTest {
  private static final long NOW = 1_800_000_000_000L;
  private static final long EXPIRY = NOW + 3_600_000;

  @Test
  void poolRate_isThisReplicasOverItsShare_alone_orWithoutAShare_itsOwn() {
    assertThat(StartWindow.poolRate(1_000, 1.0 / 3)).isCloseTo(3_000, within(1e-6));
    assertThat(StartWindow.poolRate(1_000, 1.0)).isEqualTo(1_000);
    assertThat(StartWindow.poolRate(1_000, 0)).isEqualTo(1_000);
  }

  @Test
  void window_wholeRateToHalfRatePlusOneInterval_cappedAtExpiry() {
    StartWindow w = StartWindow.of(NOW, EXPIRY, 3_000, 1_000, 1_000, 1_000);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 3_000);
    assertThat(w.latestMillis()).isEqualTo(NOW + 8_000 + 1_000);
    assertThat(StartWindow.of(NOW, NOW + 5_000, 3_000, 1_000, 1_000, 1_000).latestMillis())
        .isEqualTo(NOW + 5_000);
  }

  @Test
  void noRateYet_nowToExpiry() {
    StartWindow w = StartWindow.of(NOW, EXPIRY, 3_000, 1_000, 0, 1_000);
    assertThat(w).isEqualTo(new StartWindow(NOW, EXPIRY));
  }

  @Test
  void rate_measuredSinceStart_overTheShare_elseTheStartingRate() {
    assertThat(StartWindow.rate(1_000, 0.5, 9_999)).isCloseTo(2_000, within(1e-6));
    assertThat(StartWindow.rate(0, 0.5, 9_999)).isEqualTo(9_999); // no completion yet
    assertThat(StartWindow.rate(0, 0.5, -1)).isZero();
    // 60,000 work units per 30 s: 2,000 a second
    assertThat(StartWindow.prior(60_000, 30_000_000_000L)).isCloseTo(2_000, within(1e-6));
    assertThat(StartWindow.prior(60_000, 0)).isZero();
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }
}
