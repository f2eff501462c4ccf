package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What the adaptive-pool tests through the admission core share: a fake clock, one chat class (20 s
 * queue wait, 100–1,000 output tokens) and one tenant, a controller over one pool with a fixed
 * random draw, and a request of 100 units asked to be held.
 */
abstract class AdaptivePoolFixture {
  static final long SEC = 1_000_000_000L;
  final FakeTicker time = new FakeTicker();
  final ClassPolicy chat;
  final Tenant tenant;

  /** {@code queueWorkShare}: the chat class's waiting room, as a share of the pool's work. */
  AdaptivePoolFixture(double queueWorkShare, Tenant tenant) {
    this.chat =
        ClassPolicy.builder("chat")
            .maxQueueWait(Duration.ofSeconds(20))
            .outputTokens(100, 1000)
            .queue(queueWorkShare, 100, 1.0)
            .build();
    this.tenant = tenant;
  }

  AdmissionController controller(PoolPolicy p) {
    return new AdmissionController(
        List.of(p),
        List.of(chat),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  /** A request of 100 units now, due at {@code deadlineNanos}, held up to {@code holdNanos}. */
  Decision decide(
      AdmissionController c, PoolPolicy p, long deadlineNanos, long holdNanos, @Nullable Waiter w) {
    return c.decide(
        new AdmissionRequest(p, chat, tenant, 100, time.nanos(), deadlineNanos, -1, -1),
        Ask.hold(holdNanos, w, time.nanos()));
  }
}
