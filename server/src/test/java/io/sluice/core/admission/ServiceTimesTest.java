package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The learned service times of one pool, fed permit by permit on a fake clock. */
class ServiceTimesTest {
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = Policies.pool(1000);
  private final ClassPolicy interactive = Policies.cls("interactive", 0, 1.0, 0.0, true);
  private final Tenant acme = Policies.tenant("acme", 0);
  private final PoolState owner =
      new PoolState(
          pool, List.of(interactive), 1, PoolState.ReleaseListener.NONE, () -> 0.5, false);
  private final ClassSlot slot = new ClassSlot(interactive, pool);
  private final ServiceTimes service = new ServiceTimes(pool);

  private Permit permit(long work, long input, long output) {
    return new Permit(owner, slot, acme, work, work, time.nanos(), input, output);
  }

  private AdmissionRequest request(long work) {
    return Policies.request(pool, interactive, acme, work, time.nanos());
  }

  @Test
  void beforeAnyCompletionTheDefaultServiceTimeIsAssumed() {
    service.reconfigure(pool);
    assertThat(service.hasSamples()).isFalse();
    assertThat(service.deadlineServiceNanos(slot, request(100), 100))
        .isEqualTo(pool.defaultServiceTime().toNanos());
  }

  @Test
  void completionsTeachTheMeanTimePerWorkUnit() {
    service.reconfigure(pool);
    for (int i = 0; i < 5; i++) {
      Permit p = permit(100, -1, -1);
      time.advance(Duration.ofMillis(500));
      service.onRelease(slot, p, Outcome.COMPLETED, time.nanos());
    }
    assertThat(service.hasSamples()).isTrue();
    assertThat(service.deadlineServiceNanos(slot, request(200), 200))
        .isBetween(999_999_000L, 1_000_001_000L); // 200 units × 5 ms, up to rounding
  }

  @Test
  void anErrorTeachesNoServiceTime() {
    service.reconfigure(pool);
    Permit p = permit(100, -1, -1);
    time.advance(Duration.ofMillis(5));
    service.onRelease(slot, p, Outcome.ERROR, time.nanos());
    assertThat(service.hasSamples()).isFalse();
  }

  @Test
  void aReconfigurationWithTheSameSettingsKeepsWhatWasLearned() {
    service.reconfigure(pool);
    Permit p = permit(100, -1, -1);
    time.advance(Duration.ofMillis(500));
    service.onRelease(slot, p, Outcome.COMPLETED, time.nanos());
    service.reconfigure(pool);
    assertThat(service.hasSamples()).isTrue();
    service.reconfigure(Policies.pool(2000));
    assertThat(service.hasSamples()).isFalse();
  }

  @Test
  void theDrainOfNothingTakesNoTime() {
    service.reconfigure(pool);
    assertThat(service.drainNanos(0, 0)).isZero();
    // floor rate: the whole capacity over the default service time
    assertThat(service.drainNanos(1000, 5)).isEqualTo(pool.defaultServiceTime().toNanos());
  }

  @Test
  void everyReleaseFeedsTheDrainRateButOnlyCompletionsTheServiceTime() {
    service.reconfigure(pool);
    // streams that end as cancels (the adapter never saw a response): 100 units every 100 ms
    for (int i = 0; i < 100; i++) {
      Permit p = permit(100, 10, 90);
      time.advance(Duration.ofMillis(100));
      service.onRelease(slot, p, Outcome.CANCELLED, time.nanos());
    }
    assertThat(service.predictor().measuredWorkUnitsPerSecond()).isBetween(900.0, 1100.0);
    assertThat(service.drainNanos(1000, 0)).isBetween(900_000_000L, 1_100_000_000L);
    assertThat(service.hasSamples()).isFalse(); // a cancel is no service-time sample
  }
}
