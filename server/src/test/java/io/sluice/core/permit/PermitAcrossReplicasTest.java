package io.sluice.core.permit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryPermitLeases;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Issue 37: two replicas (two desks, each its own pools) sharing one lease store: a permit granted
 * at A is renewed and released at B, once, and A gives its pool's place back at its next sweep; a
 * killed caller's permit, renewed at B for a while, comes back at A when its lease runs out.
 */
class PermitAcrossReplicasTest {
  private final FakeTicker time = new FakeTicker(Long.MAX_VALUE - 1_000_000_000_000L);
  private final InMemoryPermitLeases store = new InMemoryPermitLeases(time);
  private final AdmissionController poolsA = PermitTestDesks.pools();
  private final AdmissionController poolsB = PermitTestDesks.pools();
  private final PermitDesk a = PermitTestDesks.desk(poolsA, store, time, PermitEvents.NONE);
  private final PermitDesk b = PermitTestDesks.desk(poolsB, store, time, PermitEvents.NONE);

  private static <T> T join(CompletionStage<T> s) {
    return s.toCompletableFuture().join();
  }

  private PermitDesk.Answer acquire(PermitDesk d) {
    List<PermitDesk.Answer> out = new ArrayList<>();
    d.acquire(new PermitDesk.Request("pg", "acme", "db", 1, 0, ""), out::add);
    assertThat(out).hasSize(1);
    return out.get(0);
  }

  private int inFlight(AdmissionController c) {
    return c.pool("pg").snapshot(time.nanos()).requestsInFlight();
  }

  @Test
  void grantedAtA_releasedAtB_once_andAGivesThePlaceBackAtItsSweep() {
    PermitDesk.Answer p = acquire(a);
    assertThat(p.kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(join(b.renew(p.permitId())).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(join(b.release(p.permitId(), 1)).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(join(b.release(p.permitId(), 1)).kind())
        .as("a second release, at B")
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(inFlight(poolsA)).as("until A's sweep").isEqualTo(1);
    assertThat(join(a.expireDue())).as("not an expiry").isZero();
    assertThat(inFlight(poolsA)).isZero();
    assertThat(a.leases()).isZero();
    assertThat(a.counts()[5]).as("released at another replica").isEqualTo(1);
    assertThat(join(a.release(p.permitId(), 1)).kind())
        .as("a third release, at A")
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(inFlight(poolsB)).as("B never held it").isZero();
  }

  @Test
  void renewedAtB_staysAtA_thenAKilledCallersPermitComesBackAtA() {
    PermitDesk.Answer p = acquire(a);
    time.advance(Duration.ofSeconds(8));
    assertThat(join(b.renew(p.permitId())).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    time.advance(Duration.ofSeconds(8));
    assertThat(join(a.expireDue())).as("renewed at B").isZero();
    assertThat(inFlight(poolsA)).isEqualTo(1);
    time.advance(Duration.ofSeconds(3)); // the caller died after its renew at B
    assertThat(join(a.expireDue())).isEqualTo(1);
    assertThat(inFlight(poolsA)).isZero();
    assertThat(join(b.release(p.permitId(), 1)).kind()).isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
  }
}
