package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link PoolState#replicaShare()}: what the workflow budget scales by. */
class ReplicaShareFractionTest {
  @Test
  void wholePoolUntilAShareIsApplied_thenTheShareOverTheLimit() {
    PoolPolicy pool = Policies.pool(1000, 10);
    ClassPolicy c = Policies.cls("interactive", 0, 1.0, 0.0, true);
    AdmissionController controller =
        new AdmissionController(
            List.of(pool),
            List.of(c),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    PoolState p = controller.pool(pool.name());

    assertThat(p.replicaShare()).isEqualTo(1.0);
    p.applyShare(250, 3, null, 0);
    assertThat(p.replicaShare()).isEqualTo(0.25);
    p.applyShare(5000, 30, null, 0);
    assertThat(p.replicaShare()).isEqualTo(1.0);
    p.applyShare(0, 0, null, 0);
    assertThat(p.replicaShare()).isZero();
  }
}
