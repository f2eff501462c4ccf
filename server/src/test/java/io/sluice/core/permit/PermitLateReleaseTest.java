package io.sluice.core.permit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryPermitLeases;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Issue 37: a release that arrives after the store expired the lease but before the granting
 * replica's sweep is counted once, as a release after expiry, at the replica that got it (not as an
 * expiry, not as a release, not twice); its {@code actual_work} is counted there; the granting
 * replica gives its place back at its sweep without counting an expiry. A sweep that ends the
 * expired lease first counts the expiry, and a release after it counts nothing.
 */
class PermitLateReleaseTest {
  private final FakeTicker time = new FakeTicker(Long.MAX_VALUE - 1_000_000_000_000L);
  private final InMemoryPermitLeases store = new InMemoryPermitLeases(time);
  private final AdmissionController poolsA = PermitTestDesks.pools();
  private final AdmissionController poolsB = PermitTestDesks.pools();
  private final Events eventsA = new Events();
  private final Events eventsB = new Events();
  private final PermitDesk a = PermitTestDesks.desk(poolsA, store, time, eventsA);
  private final PermitDesk b = PermitTestDesks.desk(poolsB, store, time, eventsB);

  /** The events one replica reported: "ended <how>" and "work <n>". */
  static final class Events implements PermitEvents {
    final List<String> seen = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void ended(String pool, End how) {
      seen.add("ended " + how);
    }

    @Override
    public void work(String pool, long actualWork) {
      seen.add("work " + actualWork);
    }
  }

  private static <T> T join(CompletionStage<T> s) {
    return s.toCompletableFuture().join();
  }

  private String acquireAtA() {
    List<PermitDesk.Answer> out = new ArrayList<>();
    a.acquire(new PermitDesk.Request("pg", "acme", "db", 1, 0, ""), out::add);
    assertThat(out).hasSize(1);
    assertThat(out.get(0).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    return out.get(0).permitId();
  }

  private int inFlight(AdmissionController c) {
    return c.pool("pg").snapshot(time.nanos()).requestsInFlight();
  }

  @Test
  void releasedAtBAfterExpiry_beforeASweep_countedOnceAtB_asAReleaseAfterExpiry() {
    String id = acquireAtA();
    time.advance(Duration.ofSeconds(11)); // the caller stalled past its lease; A has not swept
    assertThat(join(b.release(id, 7)).kind())
        .as("released: false")
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(eventsB.seen).containsExactly("ended RELEASED_AFTER_EXPIRY", "work 7");
    assertThat(b.counts()[6]).isEqualTo(1);
    assertThat(join(b.release(id, 7)).kind()).isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(b.counts()[6]).as("a second release is not counted").isEqualTo(1);
    assertThat(inFlight(poolsA)).as("until A's sweep").isEqualTo(1);
    assertThat(join(a.expireDue())).as("not an expiry").isZero();
    assertThat(inFlight(poolsA)).isZero();
    assertThat(a.leases()).isZero();
    assertThat(eventsA.seen).as("nothing counted at A").isEmpty();
    assertThat(a.counts()[3] + a.counts()[4] + a.counts()[5]).isZero();
    assertThat(join(a.expireDue())).isZero();
    assertThat(eventsB.seen).hasSize(2);
  }

  @Test
  void releasedAtTheGrantingReplicaAfterExpiry_countedOnceThere_withItsWork() {
    String id = acquireAtA();
    time.advance(Duration.ofSeconds(11));
    assertThat(join(a.release(id, 3)).kind()).isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(inFlight(poolsA)).as("given back at once").isZero();
    assertThat(join(a.expireDue())).isZero();
    assertThat(eventsA.seen).containsExactly("ended RELEASED_AFTER_EXPIRY", "work 3");
    assertThat(a.counts()[3]).as("not an expiry").isZero();
    assertThat(a.counts()[4]).as("not a release").isZero();
  }

  @Test
  void sweptFirst_countedOnceAsAnExpiry_aLaterReleaseCountsNothing() {
    String id = acquireAtA();
    time.advance(Duration.ofSeconds(11));
    assertThat(join(a.expireDue())).isEqualTo(1);
    assertThat(inFlight(poolsA)).isZero();
    assertThat(join(b.release(id, 5)).kind()).isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(eventsA.seen).containsExactly("ended EXPIRED");
    assertThat(eventsB.seen).as("an expiry is not counted twice").isEmpty();
  }

  @Test
  void aReleaseInTime_countsItsWorkAtTheReplicaThatGotIt() {
    String id = acquireAtA();
    assertThat(join(b.release(id, 4)).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(eventsB.seen).containsExactly("ended RELEASED", "work 4");
    assertThat(join(a.expireDue())).isZero();
    assertThat(eventsA.seen).containsExactly("ended RELEASED_ELSEWHERE");
  }
}
