package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.PoolState;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 31: a replica halted with work in flight leaves its lease in the store; the process that
 * replaces it under the same pod name drops that lease before its first grant, so the pool is whole
 * again at once instead of after {@code leaseTtl}. Fake time; the store is {@link ShareLeaseModel}.
 */
class RestartedReplicaTest {
  private final FakeTicker ticker = new FakeTicker();
  private final long start = ticker.nanos();
  private final ShareLeaseModel store =
      new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
  private final ReplicaPolicy policy =
      ReplicaSharesSimulationTest.policy(ReplicaPolicy.StoreDown.REFUSE, 2);

  private AdmissionController controller() {
    return new AdmissionController(
        List.of(ReplicaSharesSimulationTest.POOL),
        List.of(ReplicaSharesSimulationTest.CLS),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        Math::random);
  }

  private static void fill(AdmissionController c, long now, int n) {
    for (int i = 0; i < n; i++) {
      Decision d =
          c.decide(
              new AdmissionRequest(
                  ReplicaSharesSimulationTest.POOL,
                  ReplicaSharesSimulationTest.CLS,
                  ReplicaSharesSimulationTest.TENANT,
                  10,
                  now,
                  now + Duration.ofSeconds(30).toNanos(),
                  -1,
                  -1),
              Ask.now(now));
      assertThat(d).isInstanceOf(Decision.Admit.class);
    }
  }

  /** The request slots a fresh coordinator for "pod-0" is granted at its first tick. */
  private int firstGrantAfterCrash(String supersedes) {
    AdmissionController peer = controller();
    ShareCoordinator p = new ShareCoordinator("pod-1#b", "pod-1#", "ns_", policy, store, ticker);
    AdmissionController dead = controller();
    ShareCoordinator d = new ShareCoordinator("pod-0#a", "pod-0#", "ns_", policy, store, ticker);
    for (int i = 0; i < 10; i++) {
      p.tick(peer.pools());
      d.tick(dead.pools());
      ticker.advance(Duration.ofMillis(200));
    }
    // pod-0 takes all its share in flight, then halts: no renewal, no leave
    int held = d.statuses().get("p").grantedRequests();
    assertThat(held).isPositive();
    fill(dead, ticker.nanos(), held);
    d.tick(dead.pools());
    ticker.advance(Duration.ofMillis(200));
    p.tick(peer.pools());
    AdmissionController next = controller();
    ShareCoordinator n = new ShareCoordinator("pod-0#c", supersedes, "ns_", policy, store, ticker);
    n.tick(next.pools());
    return n.statuses().get("p").grantedRequests();
  }

  @Test
  void samePodName_predecessorsLeaseDropped_wholeShareAtTheFirstGrant() {
    int granted = firstGrantAfterCrash("pod-0#");
    // all the pool less what the live peer holds (half of 8)
    assertThat(granted).isEqualTo(ReplicaSharesSimulationTest.MAX_REQUESTS / 2);
  }

  @Test
  void noPredecessorKnown_theDeadLeaseCountsUntilItExpires() {
    int granted = firstGrantAfterCrash("");
    assertThat(granted).as("the dead lease still holds its half").isZero();
  }
}
