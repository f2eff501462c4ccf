package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Classes of equal rank share a saturated pool by arrival, never by the order the policy file lists
 * them (docs/scheduling.md, "Equal ranks"). A fake clock orders the arrivals.
 */
class EqualRankOrderTest {
  private static final long HOLD = Duration.ofSeconds(20).toNanos();

  private static ClassPolicy cls(String name, double reserved) {
    return ClassPolicy.builder(name)
        .shares(
            reserved,
            reserved /* all lendable: shares are reserves (scheduler lanes), nothing guaranteed */)
        .maxQueueWait(Duration.ofSeconds(10))
        .outputTokens(100, 1000)
        .queue(2.0, 100, 1.0)
        .build();
  }

  /** Which class each start went to, in order, for one listing of the classes. */
  private static String served(double interactiveShare, double batchShare, boolean batchFirst) {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool =
        PoolPolicy.builder("p", 100)
            .maxMessageTimeout(Duration.ofSeconds(20))
            .retryAfterJitter(0.0)
            .defaultServiceTime(Duration.ofSeconds(1))
            .build();
    ClassPolicy interactive = cls("interactive", interactiveShare);
    ClassPolicy batch = cls("batch", batchShare);
    AdmissionController controller =
        new AdmissionController(
            List.of(pool),
            batchFirst ? List.of(batch, interactive) : List.of(interactive, batch),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    Tenant tenant = new Tenant("t", TierPolicy.defaults("t"));
    StringBuilder out = new StringBuilder();
    List<Permit> running = new ArrayList<>();
    // the pool is full: five 10-unit requests of each class
    for (int n = 0; n < 10; n++) {
      ClassPolicy c = n % 2 == 0 ? interactive : batch;
      Decision d =
          controller.decide(
              new AdmissionRequest(
                  pool, c, tenant, 10, time.nanos(), time.nanos() + HOLD * 3, -1, -1),
              Ask.hold(HOLD, null, time.nanos()));
      running.add(((Decision.Admit) d).permit());
    }
    // waiting arrivals alternate, interactive first; each start is recorded in order
    for (int n = 0; n < 8; n++) {
      ClassPolicy c = n % 2 == 0 ? interactive : batch;
      String tag = n % 2 == 0 ? "i" : "b";
      time.advance(Duration.ofMillis(1));
      Decision d =
          controller.decide(
              new AdmissionRequest(
                  pool, c, tenant, 10, time.nanos(), time.nanos() + HOLD * 3, -1, -1),
              Ask.hold(
                  HOLD,
                  new Waiter() {
                    @Override
                    public void admitted(Permit permit, long waitedNanos) {
                      out.append(tag);
                      running.add(permit);
                    }

                    @Override
                    public void refused(Decision.Reject rejection, long waitedNanos) {
                      out.append('x');
                    }
                  },
                  time.nanos()));
      assertThat(d).isInstanceOf(Decision.Queued.class);
    }
    // the oldest in-flight request ends, one at a time
    for (int n = 0; n < 8; n++) {
      time.advance(Duration.ofMillis(10));
      running.remove(0).release(Outcome.COMPLETED, time.nanos());
    }
    return out.toString();
  }

  @Test
  void withoutReservesWhatFreesGoesByArrivalWhateverTheListing() {
    assertThat(served(0.0, 0.0, false)).isEqualTo("ibibibib");
    assertThat(served(0.0, 0.0, true)).isEqualTo("ibibibib");
  }

  @Test
  void withReservesTheListingDoesNotChangeWhoIsServed() {
    assertThat(served(0.7, 0.3, true)).isEqualTo(served(0.7, 0.3, false));
    assertThat(served(0.3, 0.3, true)).isEqualTo(served(0.3, 0.3, false)).isEqualTo("ibibibib");
  }
}
