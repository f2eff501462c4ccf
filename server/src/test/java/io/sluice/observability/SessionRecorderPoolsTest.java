package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.Charge;
import io.sluice.core.session.CheckNotes;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Subject;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link SessionRecorder}'s release of a permit: the permit's meters (released, hold) are those of
 * the pool it ran in, the tokens charged those of the request's own pool. One lookup serves both
 * when it ran in its own pool; a rerouted request (another pool) or a run pool that is another
 * instance of the same policy still reach the meters their names give.
 */
class SessionRecorderPoolsTest {
  private static final long HELD = Duration.ofMillis(70).toNanos();

  private final FakeTicker ticker = new FakeTicker();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final SessionRecorder recorder =
      new SessionRecorder(
          new AdmissionMetrics(registry, ticker::nanos),
          new DecisionLog(DecisionLogSettings.of(false, 1.0, true, 0, 0), null, null),
          List.of());
  private final Subject subject =
      OneSlotPool.chat(
          new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
          ticker.nanos(),
          null,
          Duration.ofSeconds(5).toNanos());

  /** A release of {@link #subject} that ran in {@code ran}, charged 30 input and 12 output. */
  private void release(PoolPolicy ran) {
    RequestFacts f =
        new RequestFacts(
            subject,
            0,
            "headers",
            null,
            new RequestFacts.Decided(Reason.ADMITTED, 1_000, 0, 0, -1, 0, null),
            new RequestFacts.Run(ran, true, null, null, null, ticker.nanos()),
            null,
            CheckNotes.NONE,
            new RequestFacts.End(
                200, "seen", false, new Charge(Charge.STREAMED, 30, 12, 12, 0), true, -1));
    recorder.on(new SessionEvent.Released(f, Outcome.COMPLETED, HELD, Usage.NONE));
  }

  private double released(String pool) {
    Counter c =
        registry
            .find(MetricNames.PERMITS_RELEASED)
            .tags("pool", pool, "class", "interactive", "outcome", "completed")
            .counter();
    return c == null ? 0 : c.count();
  }

  private double holdMillis(String pool) {
    Timer t = registry.find(MetricNames.PERMIT_HOLD).tags("pool", pool).timer();
    return t == null ? 0 : t.totalTime(TimeUnit.MILLISECONDS);
  }

  private double charged(String pool) {
    return registry.find(MetricNames.TOKENS_CHARGED).tags("pool", pool).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  @Test
  void ranInItsOwnPool_releaseAndChargeOnThatPool() {
    release(subject.pool());
    release(subject.pool());

    assertThat(released("gpu")).isEqualTo(2);
    assertThat(holdMillis("gpu")).isEqualTo(140);
    assertThat(charged("gpu")).isEqualTo(2 * 42);
  }

  @Test
  void rerouted_releaseOnTheTargetPool_chargeOnItsOwn() {
    PoolPolicy small = PoolPolicy.defaults("small", 1_000);

    release(small);

    assertThat(released("small")).isEqualTo(1);
    assertThat(holdMillis("small")).isEqualTo(70);
    assertThat(released("gpu")).as("the permit was the target pool's").isZero();
    assertThat(holdMillis("gpu")).isZero();
    assertThat(charged("gpu")).as("the tenant is charged in its own pool").isEqualTo(42);
    assertThat(charged("small")).isZero();
  }

  @Test
  void anotherInstanceOfItsOwnPool_sameMetersByName() {
    PoolPolicy sameName = OneSlotPool.pool(100_000, 1);
    assertThat(sameName).isNotSameAs(subject.pool());

    release(sameName);
    release(subject.pool());

    assertThat(released("gpu")).isEqualTo(2);
    assertThat(holdMillis("gpu")).isEqualTo(140);
    assertThat(charged("gpu")).isEqualTo(2 * 42);
  }
}
