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
 * The waiting side of one pool with a scripted starter: what is queued, started, expired, cancelled
 * and refused, on a fake clock.
 */
class QueueCoordinatorTest {
  private static final long WAIT = Duration.ofSeconds(2).toNanos();
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = Policies.pool(1000);
  private final ClassPolicy interactive = Policies.cls("interactive", 0, 0.5, 0.0, true);
  private final ClassPolicy batch = Policies.cls("batch", 1, 0.5, 0.0, true);
  private final Tenant acme = Policies.tenant("acme", 0);
  private final PoolState owner =
      new PoolState(
          pool, List.of(interactive), 1, PoolState.ReleaseListener.NONE, () -> 0.5, false);
  private final CapacityLedger capacity = new CapacityLedger(pool);
  private final ServiceTimes service = new ServiceTimes(pool);
  private final RetryAdvice retry =
      new RetryAdvice(Duration.ofSeconds(10).toNanos(), () -> 0.5, pool);
  private final List<AdmissionRequest> proposed = new ArrayList<>();
  private boolean accept;
  private final QueueCoordinator queues;
  private final List<QueueCoordinator.Callback> callbacks = new ArrayList<>();

  QueueCoordinatorTest() {
    List<ClassSlot> slots = capacity.reconfigure(pool, List.of(interactive, batch));
    queues =
        new QueueCoordinator(
            capacity,
            service,
            retry,
            (k, request, now) -> {
              proposed.add(request);
              return accept
                  ? new QueueCoordinator.Start(capacity.take(owner, k, request, now), null)
                  : null;
            },
            slots,
            pool);
  }

  private static final class Recorder implements Waiter {
    final List<Object> answers = new ArrayList<>();

    @Override
    public void admitted(Permit permit, long waitedNanos) {
      answers.add(permit);
    }

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {
      answers.add(rejection.reason());
    }
  }

  private Decision enqueue(String cls, long work, Recorder waiter) {
    ClassSlot k = capacity.slot(cls);
    return queues.enqueue(
        k,
        Policies.request(pool, k.policy(), acme, work, time.nanos()),
        waiter,
        WAIT,
        time.nanos(),
        callbacks);
  }

  private void runCallbacks() {
    callbacks.forEach(QueueCoordinator.Callback::run);
    callbacks.clear();
  }

  @Test
  void aQueuedRequestStartsWhenTheStarterAcceptsIt() {
    Recorder w = new Recorder();
    Decision d = enqueue("interactive", 100, w);
    assertThat(d).isInstanceOf(Decision.Queued.class);
    assertThat(proposed).isNotEmpty(); // queuing itself drains: the starter said no
    assertThat(queues.hasWaitingAtOrAbove(0)).isTrue();
    assertThat(queues.tenantQueued("acme")).isEqualTo(1);
    accept = true;
    time.advance(Duration.ofMillis(10));
    queues.drain(time.nanos(), callbacks);
    runCallbacks();
    assertThat(w.answers).singleElement().isInstanceOf(Permit.class);
    assertThat(queues.tenantQueued("acme")).isZero();
    assertThat(queues.hasWaitingAtOrAbove(Integer.MAX_VALUE)).isFalse();
  }

  @Test
  void aRequestThatWaitedItsLongestIsAnsweredQueueTimeout() {
    Recorder w = new Recorder();
    Decision.Queued q = (Decision.Queued) enqueue("batch", 100, w);
    assertThat(queues.nextExpiryNanos()).hasValue(q.expiresAtNanos());
    time.advanceNanos(q.expiresAtNanos() - time.nanos() - 1);
    queues.drain(time.nanos(), callbacks);
    assertThat(callbacks).isEmpty();
    time.advanceNanos(1);
    queues.drain(time.nanos(), callbacks);
    runCallbacks();
    assertThat(w.answers).containsExactly(Reason.QUEUE_TIMEOUT);
    assertThat(queues.nextExpiryNanos()).isEmpty();
  }

  @Test
  void aCancelledRequestLeavesAtOnceAndIsNotAnswered() {
    Recorder w = new Recorder();
    Decision.Queued q = (Decision.Queued) enqueue("batch", 100, w);
    assertThat(queues.cancel(q.ticket(), time.nanos(), callbacks)).isTrue();
    assertThat(queues.cancel(q.ticket(), time.nanos(), callbacks)).isFalse();
    runCallbacks();
    assertThat(w.answers).isEmpty();
    assertThat(queues.tenantQueued("acme")).isZero();
  }

  @Test
  void shutdownRefusesEveryWaitingRequest() {
    Recorder a = new Recorder();
    Recorder b = new Recorder();
    enqueue("interactive", 100, a);
    enqueue("batch", 100, b);
    assertThat(queues.refuseAll(Reason.SHUTTING_DOWN, time.nanos(), callbacks)).isEqualTo(2);
    runCallbacks();
    assertThat(a.answers).containsExactly(Reason.SHUTTING_DOWN);
    assertThat(b.answers).containsExactly(Reason.SHUTTING_DOWN);
  }

  @Test
  void waitingWorkIsCountedByRank() {
    enqueue("interactive", 100, new Recorder());
    enqueue("batch", 30, new Recorder());
    assertThat(queues.queuedWorkAtOrAbove(0)).isEqualTo(100);
    assertThat(queues.queuedWorkAtOrAbove(1)).isEqualTo(130);
    assertThat(queues.hasWaitingAtOrAbove(0)).isTrue();
    assertThat(
            new PoolReadings(capacity, new CapacityRules(capacity), retry).queues(time.nanos(), 1))
        .extracting(PoolState.QueueSnapshot::depth)
        .containsExactly(1, 1);
  }

  /**
   * The count of waiting requests that lets an admit or release of a pool nobody waits in skip its
   * queues (drain, rule 2, a capped tenant's queued count): in by every enqueue, out by every way a
   * request leaves, so it is 0 again whenever the queues are empty.
   */
  @Test
  void waitingCount_followsEveryWayInAndOut_zeroWhenTheQueuesAreEmpty() {
    Recorder started = new Recorder();
    Recorder cancelled = new Recorder();
    Recorder expired = new Recorder();
    Decision.Queued c = (Decision.Queued) enqueue("batch", 100, cancelled);
    Decision.Queued e = (Decision.Queued) enqueue("batch", 50, expired);
    time.advance(Duration.ofMillis(10)); // the interactive one expires later
    enqueue("interactive", 100, started);
    assertThat(queues.queuedItems()).isEqualTo(3);
    assertThat(queues.cancel(c.ticket(), time.nanos(), callbacks)).isTrue();
    assertThat(queues.queuedItems()).isEqualTo(2);
    time.advanceNanos(e.expiresAtNanos() - time.nanos()); // the batch one's time is up
    queues.drain(time.nanos(), callbacks);
    runCallbacks();
    assertThat(expired.answers).containsExactly(Reason.QUEUE_TIMEOUT);
    assertThat(queues.queuedItems()).isEqualTo(1);
    assertThat(queues.hasWaitingAtOrAbove(0)).as("interactive still waits").isTrue();
    accept = true;
    queues.drain(time.nanos(), callbacks);
    runCallbacks();
    assertThat(started.answers).singleElement().isInstanceOf(Permit.class);
    assertThat(queues.queuedItems()).isZero();
    assertThat(queues.hasWaitingAtOrAbove(Integer.MAX_VALUE)).isFalse();
    assertThat(queues.tenantQueued("acme")).isZero();
    accept = false;
    Recorder a = new Recorder();
    enqueue("interactive", 100, a);
    enqueue("batch", 100, new Recorder());
    assertThat(queues.tenantQueued("acme")).isEqualTo(2);
    assertThat(queues.refuseAll(Reason.SHUTTING_DOWN, time.nanos(), callbacks)).isEqualTo(2);
    runCallbacks();
    assertThat(a.answers).containsExactly(Reason.SHUTTING_DOWN);
    assertThat(queues.queuedItems()).isZero();
    accept = true; // nothing waits: a drain starts nothing and the starter is asked nothing
    proposed.clear();
    queues.drain(time.nanos(), callbacks);
    assertThat(proposed).isEmpty();
    assertThat(callbacks).isEmpty();
  }
}
