package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pool's wait prediction uses the dimension that binds (request slots as well as work units)
 * and learns from every stream's end, so a request that cannot start in time is refused at once
 * with an honest Retry-After instead of being held until it expires. Fake clock throughout.
 */
class WaitPredictionDimensionsTest {
  private static final long HOLD = Duration.ofSeconds(20).toNanos();
  private final FakeTicker time = new FakeTicker();
  private final Tenant acme = Policies.tenant("acme", 0);
  private final ClassPolicy interactive = Policies.cls("interactive", 0, 1.0, 0.0, true);

  private static PoolPolicy pool(long capacity, int maxRequests, Duration defaultService) {
    return PoolPolicy.builder("p", capacity)
        .maxRequests(maxRequests)
        .retryAfter(Duration.ofSeconds(1), Duration.ofSeconds(300))
        .maxMessageTimeout(Duration.ofSeconds(20))
        .retryAfterJitter(0.0)
        .defaultServiceTime(defaultService)
        .build();
  }

  private AdmissionController controller(PoolPolicy pool) {
    return new AdmissionController(
        List.of(pool),
        List.of(interactive),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  private Decision decide(AdmissionController c, PoolPolicy pool, long work, Waiter w) {
    return c.decide(
        new AdmissionRequest(
            pool,
            interactive,
            acme,
            work,
            time.nanos(),
            time.nanos() + Duration.ofSeconds(120).toNanos(),
            -1,
            -1),
        Ask.hold(HOLD, w, time.nanos()));
  }

  private static final Waiter IGNORE =
      new Waiter() {
        @Override
        public void admitted(Permit permit, long waitedNanos) {}

        @Override
        public void refused(Decision.Reject rejection, long waitedNanos) {}
      };

  @Test
  void whenTheRequestCapBindsAnUnreachableWaitIsRefusedAtOnce() {
    // work never binds (1,000,000 units); 2 slots; a slot frees about every 5 s (default service
    // 10 s for the pool's 2 slots); the class waits at most 2 s
    PoolPolicy pool = pool(1_000_000, 2, Duration.ofSeconds(10));
    AdmissionController c = controller(pool);
    assertThat(decide(c, pool, 10, IGNORE)).isInstanceOf(Decision.Admit.class);
    assertThat(decide(c, pool, 10, IGNORE)).isInstanceOf(Decision.Admit.class);
    Decision d = decide(c, pool, 10, IGNORE);
    assertThat(d).isInstanceOf(Decision.Reject.class);
    Decision.Reject r = (Decision.Reject) d;
    assertThat(r.reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(5);
  }

  @Test
  void streamsThatEndWithoutAResponseStillTeachTheDrainRate() {
    // response phases are not sent to Sluice: every stream ends as a cancel after 1 s
    PoolPolicy pool = pool(100, 0, Duration.ofSeconds(60));
    AdmissionController c = controller(pool);
    for (int round = 0; round < 30; round++) {
      List<Permit> running = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        running.add(((Decision.Admit) decide(c, pool, 10, IGNORE)).permit());
      }
      time.advance(Duration.ofSeconds(1));
      running.forEach(p -> p.release(Outcome.CANCELLED, time.nanos()));
    }
    // measured: 100 units/s. The pool is full and 50 units wait: 60 units must drain, 0.6 s.
    // At the default rate (100 units per 60 s) that would be 36 s, beyond the 2 s queue wait.
    for (int i = 0; i < 10; i++) {
      decide(c, pool, 10, IGNORE);
    }
    for (int i = 0; i < 5; i++) {
      assertThat(decide(c, pool, 10, IGNORE))
          .as("queued #" + i)
          .isInstanceOf(Decision.Queued.class);
    }
    Decision d = decide(c, pool, 10, IGNORE);
    assertThat(d).isInstanceOf(Decision.Queued.class);
    assertThat(((Decision.Queued) d).predictedWaitNanos())
        .isBetween(Duration.ofMillis(500).toNanos(), Duration.ofMillis(700).toNanos());
  }
}
