package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.ClassShares;
import io.sluice.core.share.Load;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Under replica shares the pool's class rules count a request as the work it asks of the pool (at
 * most its class's reach in the pool), not as the smaller reach it is clamped to on a small share;
 * and a replica reports that same work to its peers as its class load. Two replicas of one pool
 * (capacity 1000; interactive guaranteed 800, idle; batch may borrow), their shares and class loads
 * passed as the share coordinator passes them, on a fake clock.
 */
class PooledClassWorkTest {
  static final PoolPolicy POOL = Policies.pool(1000);
  static final ClassPolicy INTERACTIVE = Policies.cls("interactive", 0, 0.8, 0.0, true);
  static final ClassPolicy BATCH = Policies.cls("batch", 1, 0.2, 0.0, true);
  static final Tenant TENANT = Policies.tenant("t", 0);

  final FakeTicker ticker = new FakeTicker();
  final AdmissionController a = controller();
  final AdmissionController b = controller();

  static AdmissionController controller() {
    return new AdmissionController(
        List.of(POOL),
        List.of(INTERACTIVE, BATCH),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  /** The class loads {@code from} reports, as {@code ShareTargets.peerLoads} sums them. */
  static Map<String, Load> reported(AdmissionController from) {
    Map<String, Load> out = new HashMap<>();
    for (ClassDemand c : from.pool("p").demand().classes()) {
      out.put(c.name(), new Load(c.inFlightWork(), c.inFlightRequests()));
    }
    return out;
  }

  /**
   * One renewal: a holds 574 units and b 426; each keeps 400 of interactive's idle guarantee, so
   * batch reaches 174 on a and 26 on b.
   */
  void renew() {
    Map<String, Load> idle = Map.of("interactive", new Load(400, 0));
    a.pool("p").applyShare(574, 0, new ClassShares(reported(b), idle), null, ticker.nanos());
    b.pool("p").applyShare(426, 0, new ClassShares(reported(a), idle), null, ticker.nanos());
  }

  Decision batch(AdmissionController on, long work) {
    return on.decide(
        Policies.request(POOL, BATCH, TENANT, work, ticker.nanos()), Ask.now(ticker.nanos()));
  }

  /**
   * a holds 151 batch units; b, whose batch reach is 26, is asked for a 70-unit batch job: 151 + 70
   * + 800 > 1000, so the pool has no room for it, though 151 + 26 + 800 fits.
   */
  @Test
  void aJobLargerThanItsReachOnASmallShareCountsItsOwnWorkInThePoolsClassRules() {
    renew();
    assertThat(batch(a, 151)).isInstanceOf(Decision.Admit.class);
    renew();

    assertThat(b.pool("p").canStart("batch", 70)).as("canStart(batch, 70) on b").isFalse();
    assertThat(batch(b, 70)).as("70 batch units on b").isNotInstanceOf(Decision.Admit.class);
    assertThat(b.pool("p").canStart("batch", 49)).as("151 + 49 + 800 fits").isTrue();
  }

  /**
   * b runs a 70-unit batch job (its reach, 26, on its share); it reports 70 to a, so a's class
   * rules leave batch 130, not 174.
   */
  @Test
  void aReplicaReportsThePoolAccountedWorkToItsPeers() {
    renew();
    assertThat(batch(b, 70)).isInstanceOf(Decision.Admit.class);
    assertThat(reported(b).get("batch").work()).as("b's reported batch load").isEqualTo(70);
    renew();

    assertThat(a.pool("p").canStart("batch", 131)).as("70 + 131 + 800 > 1000").isFalse();
    assertThat(a.pool("p").canStart("batch", 130)).as("70 + 130 + 800 fits").isTrue();
  }
}
