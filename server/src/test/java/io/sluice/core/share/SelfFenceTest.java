package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 31 and decision 0008, "Short leases, self-fenced": a replica stops admitting on its leased
 * share once its last answered renewal is older than its keep time (shorter than the lease), on the
 * pool's own clock, so the others may take the share when the lease expires; and with the default 1
 * s lease a halted replica's share is back with the live ones within about a second, also when its
 * successor runs under a new name and cannot drop its lease.
 */
class SelfFenceTest {
  static final PoolPolicy POOL = PoolPolicy.builder("p", 1_000_000).maxRequests(6).build();

  /** A replica: its admission controller and share coordinator, renewing on the fake clock. */
  private static final class Node {
    final AdmissionController controller =
        new AdmissionController(
            List.of(POOL),
            ShareRace.ONE_CLASS,
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    final ShareCoordinator coordinator;

    Node(String id, ReplicaPolicy policy, ShareStore store, FakeTicker ticker) {
      controller.holdForShares(ticker.nanos());
      coordinator = new ShareCoordinator(id, "", "ns_", policy, store, ticker);
    }

    void round() {
      var unused = coordinator.tick(List.of(controller.pool("p")));
    }

    final List<Permit> held = new ArrayList<>();

    /** Every call in flight here ends now. */
    void endAll(long now) {
      held.forEach(p -> p.release(Outcome.COMPLETED, now));
      held.clear();
    }

    int calls(int n, long now) {
      int in = 0;
      for (int i = 0; i < n; i++) {
        Decision d =
            controller.decide(
                new AdmissionRequest(
                    POOL,
                    ShareRace.ONE_CLASS.get(0),
                    ShareRace.TENANT,
                    1,
                    now,
                    now + 30_000_000_000L,
                    -1,
                    -1),
                Ask.now(now));
        if (d instanceof Decision.Admit admitted) {
          held.add(admitted.permit());
          in++;
        }
      }
      return in;
    }

    int inFlight() {
      return controller.pool("p").snapshot(0).requestsInFlight();
    }

    int granted() {
      return coordinator.statuses().get("p").grantedRequests();
    }
  }

  private static ShareLeaseModel store(FakeTicker ticker) {
    long start = ticker.nanos();
    return new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
  }

  /**
   * Two replicas hold 3 of 6 slots each; b's renewals stall (its timer thread stuck: no round, no
   * leave), a renews on. Calls reach both all along and b's end every 400 ms. Past b's keep time
   * (0.8 s) b admits nothing new on its own clock; past its lease (1 s) a takes the whole pool: in
   * flight across them never passes the 6 slots (without the fence b admitted 3 more on its stale
   * share next to a's 6).
   */
  @Test
  void aReplicaWhoseRenewalsStall_stopsAdmittingBeforeItsLeaseExpires() {
    FakeTicker ticker = new FakeTicker();
    ShareLeaseModel store = store(ticker);
    ReplicaPolicy.PoolMode refuse =
        new ReplicaPolicy.PoolMode(ReplicaPolicy.StoreDown.REFUSE, Duration.ofMillis(800), 3, 0.02);
    ReplicaPolicy policy =
        new ReplicaPolicy(Duration.ofSeconds(1), Duration.ofMillis(200), refuse, Map.of());
    Node a = new Node("a", policy, store, ticker);
    Node b = new Node("b", policy, store, ticker);
    for (int round = 0; round < 4; round++) {
      a.round();
      b.round();
      ticker.advance(Duration.ofMillis(100));
    }
    assertThat(List.of(a.granted(), b.granted())).containsExactly(3, 3);
    List<String> log = new ArrayList<>();
    for (int step = 0; step < 30; step++) { // b stalls from here on; 3 s of a's rounds
      ticker.advance(Duration.ofMillis(100));
      if (step % 2 == 0) {
        a.round();
      }
      if (step % 4 == 3) {
        b.endAll(ticker.nanos());
      }
      int aIn = a.calls(1, ticker.nanos());
      int bIn = b.calls(1, ticker.nanos());
      log.add(
          "t+"
              + (step + 1) * 100
              + "ms: a +"
              + aIn
              + " ("
              + a.inFlight()
              + "), b +"
              + bIn
              + " ("
              + b.inFlight()
              + ")");
      assertThat(a.inFlight() + b.inFlight())
          .as("in flight across the replicas:%n%s", String.join("\n", log))
          .isLessThanOrEqualTo(6);
    }
    assertThat(a.inFlight()).as("a took b's share once b's lease expired").isEqualTo(6);
  }

  /**
   * Three replicas on the default policy (1 s leases); c halts (its streams cut: nothing in flight,
   * its lease left in the store) and a successor under a new name joins. Rounds every 200 ms: the
   * live replicas' grants add up to the whole pool again within 1.2 s of the halt (the lease plus
   * one renewal; 5 s leases took 5.3 s in the restart bench).
   */
  @Test
  void aHaltedReplicaUnderANewName_itsShareIsBackWithinASecond() {
    FakeTicker ticker = new FakeTicker();
    ShareLeaseModel store = store(ticker);
    ReplicaPolicy policy = ReplicaPolicy.DEFAULT;
    Node a = new Node("pod-a", policy, store, ticker);
    Node b = new Node("pod-b", policy, store, ticker);
    Node c = new Node("pod-c", policy, store, ticker);
    for (int round = 0; round < 5; round++) {
      List.of(a, b, c).forEach(Node::round);
      ticker.advance(Duration.ofMillis(200));
    }
    assertThat(a.granted() + b.granted() + c.granted()).isEqualTo(6);
    long halted = ticker.nanos(); // c: no round, no leave from here on
    Node successor = new Node("pod-d", policy, store, ticker);
    long whole = -1;
    for (int step = 0; step < 40 && whole < 0; step++) {
      List.of(a, b, successor).forEach(Node::round);
      if (a.granted() + b.granted() + successor.granted() == 6) {
        whole = ticker.nanos() - halted;
      }
      ticker.advance(Duration.ofMillis(200));
    }
    System.out.println(
        "SelfFenceTest: live shares whole " + whole / 1_000_000 + " ms after the halt (new name)");
    assertThat(whole)
        .as("ns from the halt until the live shares are whole again")
        .isBetween(0L, Duration.ofMillis(1200).toNanos());
  }
}
