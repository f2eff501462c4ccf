package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.time.FakeTicker;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The decision log's default is visible and bounded per second, refusals apart from admits. */
class DecisionLogBudgetTest {
  @Test
  void embeddedDefault_logsAtInfo_boundedPerKind() {
    SluiceConfig.DecisionLog d = ConfigLoader.embeddedDefault().decisionLog();
    assertThat(d.enabled()).isTrue();
    assertThat(d.level().configName()).isEqualTo("info"); // the shipped logger config shows INFO
    assertThat(d.maxAdmittedPerSecond()).isEqualTo(10);
    assertThat(d.maxRefusedPerSecond()).isEqualTo(50);
  }

  @Test
  void perSecondBounds_admittedAndRefusedApart_droppedCounted_nextSecondResets() {
    FakeTicker clock = new FakeTicker(0);
    DecisionLogBudget budget = new DecisionLogBudget(clock::nanos);
    List<String> lines = new ArrayList<>();
    DecisionLog log =
        new DecisionLog(DecisionLogSettings.of(true, 1.0, true, 3, 5), lines::add, budget);
    int admitted = 0;
    int refused = 0;
    for (int i = 0; i < 100; i++) {
      admitted += log.wants(false) ? 1 : 0;
      refused += log.wants(true) ? 1 : 0;
    }
    assertThat(admitted).isEqualTo(3);
    assertThat(refused).isEqualTo(5); // a flood of admits never takes the refusals' budget
    assertThat(budget.dropped(false)).isEqualTo(97);
    assertThat(budget.dropped(true)).isEqualTo(95);

    clock.advanceNanos(999_999_999L); // still the same second
    assertThat(log.wants(false)).isFalse();
    clock.advanceNanos(1L); // the next one
    assertThat(log.wants(false)).isTrue();
    assertThat(log.wants(true)).isTrue();
  }

  @Test
  void zeroBound_isUnbounded_andSamplingStillApplies() {
    FakeTicker clock = new FakeTicker(0);
    DecisionLogBudget budget = new DecisionLogBudget(clock::nanos);
    DecisionLog all = new DecisionLog(DecisionLogSettings.every(), l -> {}, budget);
    DecisionLog none =
        new DecisionLog(DecisionLogSettings.of(true, 0.0, false, 0, 0), l -> {}, budget);
    for (int i = 0; i < 1000; i++) {
      assertThat(all.wants(i % 2 == 0)).isTrue();
      assertThat(none.wants(i % 2 == 0)).isFalse();
    }
    assertThat(budget.dropped(false)).isZero();
  }
}
