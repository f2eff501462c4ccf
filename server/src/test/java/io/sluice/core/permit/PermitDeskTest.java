package io.sluice.core.permit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryPermitLeases;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Permits through the pool's own decision: granted while the pool has room, queued then granted
 * when a permit comes back, refused with the pool's reason and a retry-after; a killed caller's
 * permit comes back when its lease runs out (fake clock); released exactly once; bad input answered
 * by kind; the leases bounded.
 */
class PermitDeskTest {
  private final FakeTicker time = new FakeTicker();
  private final ClassPolicy db =
      ClassPolicy.builder("db")
          .rank(0)
          .shares(1.0, 0.0)
          .borrow(true)
          .deadline(Duration.ofSeconds(30))
          .maxQueueWait(Duration.ofSeconds(5))
          .outputTokens(100, 1000)
          .build();
  private final PoolPolicy pool = PoolPolicy.builder("pg", 1000).maxRequests(2).build();
  private final AdmissionController controller =
      new AdmissionController(
          List.of(pool), List.of(db), Duration.ofSeconds(10), (p, pm, o, n) -> {}, Math::random);
  private final PermitDesk desk =
      new PermitDesk(
          controller,
          id -> new Tenant(id.isEmpty() ? "anonymous" : id, TierPolicy.builder("t").build()),
          time,
          Duration.ofSeconds(10).toNanos(),
          3,
          new PermitDesk.Shared(
              new InMemoryPermitLeases(time), "t_", () -> null, PermitEvents.NONE));

  private PermitDesk.Answer acquire(long work, long waitMs, String op) {
    List<PermitDesk.Answer> out = new ArrayList<>();
    desk.acquire(
        new PermitDesk.Request("pg", "acme", "db", work, waitMs * 1_000_000L, op), out::add);
    assertThat(out).as("answered at once").hasSize(1);
    return out.get(0);
  }

  private static <T> T join(java.util.concurrent.CompletionStage<T> s) {
    return s.toCompletableFuture().join();
  }

  private int inFlight() {
    PoolState p = controller.pool("pg");
    return p.snapshot(time.nanos()).requestsInFlight();
  }

  @Test
  void grantedThenRefusedWithTheirReason_thenQueuedThenGranted_releasedOnce() {
    PermitDesk.Answer a = acquire(1, 0, "");
    PermitDesk.Answer b = acquire(1, 0, "");
    assertThat(a.kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(b.kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(inFlight()).isEqualTo(2);
    PermitDesk.Answer full = acquire(1, 0, "");
    assertThat(full.kind()).isEqualTo(PermitDesk.Answer.Kind.REFUSED);
    assertThat(full.reason()).isNotEmpty();
    assertThat(full.retryAfterSeconds()).isPositive();

    List<PermitDesk.Answer> later = new ArrayList<>();
    desk.acquire(new PermitDesk.Request("pg", "acme", "db", 1, 4_000_000_000L, ""), later::add);
    assertThat(later).as("queued").isEmpty();
    assertThat(join(desk.release(a.permitId(), 1)).kind())
        .isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    assertThat(later).hasSize(1);
    assertThat(later.get(0).kind()).isEqualTo(PermitDesk.Answer.Kind.QUEUED_THEN_GRANTED);
    assertThat(join(desk.release(a.permitId(), 1)).kind())
        .as("a second release")
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(inFlight()).isEqualTo(2);
    join(desk.release(b.permitId(), 5));
    join(desk.release(later.get(0).permitId(), 0));
    assertThat(inFlight()).isZero();
    assertThat(desk.leases()).isZero();
  }

  @Test
  void aKilledCallersPermitComesBackWhenItsLeaseRunsOut_aRenewedOneStays() {
    PermitDesk.Answer dead = acquire(1, 0, "");
    PermitDesk.Answer live = acquire(1, 0, "");
    time.advance(Duration.ofSeconds(6));
    assertThat(join(desk.renew(live.permitId())).kind()).isEqualTo(PermitDesk.Answer.Kind.GRANTED);
    time.advance(Duration.ofSeconds(5));
    assertThat(join(desk.expireDue())).isEqualTo(1);
    assertThat(inFlight()).as("the dead caller's permit went back").isEqualTo(1);
    assertThat(join(desk.renew(dead.permitId())).kind())
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(join(desk.release(dead.permitId(), 0)).kind())
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(desk.counts()[3]).as("expired").isEqualTo(1);
    desk.close();
    assertThat(inFlight()).as("shutdown gives back the rest").isZero();
  }

  @Test
  void anOperationIdAnswersItsPermitAgain() {
    PermitDesk.Answer a = acquire(1, 0, "op-1");
    PermitDesk.Answer again = acquire(1, 0, "op-1");
    assertThat(again.permitId()).isEqualTo(a.permitId());
    assertThat(inFlight()).isEqualTo(1);
  }

  @Test
  void badInput_answeredByKind_andTheLeasesAreBounded() {
    assertThat(acquire(-1, 0, "").kind()).isEqualTo(PermitDesk.Answer.Kind.INVALID);
    assertThat(acquire(0, 0, "").kind()).isEqualTo(PermitDesk.Answer.Kind.INVALID);
    assertThat(acquire(1, -5, "").kind()).isEqualTo(PermitDesk.Answer.Kind.INVALID);
    assertThat(acquire(1, 0, "x".repeat(10_000)).kind()).isEqualTo(PermitDesk.Answer.Kind.INVALID);
    List<PermitDesk.Answer> out = new ArrayList<>();
    desk.acquire(new PermitDesk.Request("nope", "", "db", 1, 0, ""), out::add);
    desk.acquire(new PermitDesk.Request("pg", "", "nope", 1, 0, ""), out::add);
    assertThat(out)
        .extracting(PermitDesk.Answer::kind)
        .containsOnly(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(join(desk.renew("y".repeat(100_000))).kind())
        .isEqualTo(PermitDesk.Answer.Kind.NOT_FOUND);
    assertThat(join(desk.release("z", -1)).kind()).isEqualTo(PermitDesk.Answer.Kind.INVALID);

    // maxLeases 3, the pool 2: two held, one queued, the fourth is over the bound
    acquire(1, 0, "");
    acquire(1, 0, "");
    desk.acquire(new PermitDesk.Request("pg", "", "db", 1, 4_000_000_000L, ""), r -> {});
    assertThat(acquire(1, 1000, "").kind()).isEqualTo(PermitDesk.Answer.Kind.TOO_MANY);
  }
}
