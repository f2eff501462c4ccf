package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.LimitBounds;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.share.ClassShares;
import io.sluice.core.share.Load;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;

/** The limit sources on plain {@link PoolLimits} values, and their composition in order. */
class LimitSourcesTest {
  private final PoolPolicy fixed = Policies.pool(1000, 10);
  private final PoolPolicy adaptive = AdaptivePoolTest.pool(10, 2, 0.5);

  private AdaptiveLimitSource adaptiveSource(PoolPolicy p) {
    ConfiguredLimit configured = new ConfiguredLimit(p);
    return new AdaptiveLimitSource(new ReentrantLock(), new CapacityLedger(p), configured);
  }

  @Test
  void configured_isTheBase() {
    PoolLimits in = new PoolLimits(Policies.pool(5), null);
    assertThat(new ConfiguredLimit(fixed).applyTo(in)).isEqualTo(new PoolLimits(fixed, null));
  }

  @Test
  void adaptive_leavesAFixedPoolAlone() {
    PoolLimits in = new PoolLimits(fixed, null);
    assertThat(adaptiveSource(fixed).applyTo(in)).isSameAs(in);
  }

  @Test
  void adaptive_beforeItsFirstTick_startsWhereStartSays() {
    PoolLimits out = adaptiveSource(adaptive).applyTo(new PoolLimits(adaptive, null));
    assertThat(out.policy().capacityWorkUnits())
        .isEqualTo(LimitBounds.workOf(adaptive, Double.NaN))
        .isLessThan(adaptive.capacityWorkUnits());
    assertThat(out.policy().maxRequests()).isEqualTo(LimitBounds.requestsOf(adaptive, Double.NaN));
    assertThat(out.share()).isNull();
  }

  @Test
  void replicaShare_addsTheGrant_andTellsThePool() {
    ReplicaShareLimit share = new ReplicaShareLimit();
    List<Long> told = new ArrayList<>();
    share.notifyOnChange(told::add);
    PoolLimits in = new PoolLimits(fixed, null);
    assertThat(share.applyTo(in)).isSameAs(in); // no grant yet: the whole pool
    ClassShares classes = new ClassShares(Map.of("a", new Load(3, 1)), Map.of());
    share.grant(400, 4, classes, 7);
    assertThat(told).containsExactly(7L);
    assertThat(share.applyTo(in).share()).isEqualTo(new PoolLimits.Share(400, 4, classes));
    assertThat(share.applyTo(in).policy()).isSameAs(fixed);
  }

  @Test
  void sources_composeInOrder_fromTheConfiguredNumbers() {
    ConfiguredLimit configured = new ConfiguredLimit(adaptive);
    AdaptiveLimitSource learned =
        new AdaptiveLimitSource(new ReentrantLock(), new CapacityLedger(adaptive), configured);
    ReplicaShareLimit share = new ReplicaShareLimit();
    LimitSources sources = new LimitSources(configured, List.of(configured, learned, share));
    share.grant(100, 1, null, 0);
    PoolLimits limits = sources.compose();
    assertThat(limits.policy().capacityWorkUnits())
        .isEqualTo(LimitBounds.workOf(adaptive, Double.NaN));
    assertThat(limits.share()).isEqualTo(new PoolLimits.Share(100, 1, null));
    configured.reconfigure(fixed); // a reload to a fixed pool: the adaptive source steps aside
    learned.reconfigure(fixed);
    assertThat(sources.compose().policy()).isSameAs(fixed);
  }

  @Test
  void replicaShare_fence_dueAtItsInstantOnce_notBefore_andAGrantReplacesIt() {
    ReplicaShareLimit share = new ReplicaShareLimit();
    PoolLimits in = new PoolLimits(fixed, null);
    assertThat(share.fenced(0)).isFalse(); // no grant, no fence
    share.grant(400, 4, null, new io.sluice.core.share.SharedPool.Fence(100, 50, 1), 0);
    assertThat(share.fenced(99)).isFalse(); // before its instant: the grant holds
    assertThat(share.applyTo(in).share()).isEqualTo(new PoolLimits.Share(400, 4, null));
    assertThat(share.fenced(100)).isTrue(); // at its instant: the fence's share, once
    assertThat(share.applyTo(in).share()).isEqualTo(new PoolLimits.Share(50, 1, null));
    assertThat(share.fenced(200)).isFalse();
    share.grant(300, 3, null, new io.sluice.core.share.SharedPool.Fence(500, 10, 1), 200);
    share.grant(300, 3, null, null, 300); // granted again before the fence: no fence any more
    assertThat(share.fenced(600)).isFalse();
    assertThat(share.applyTo(in).share()).isEqualTo(new PoolLimits.Share(300, 3, null));
  }
}
