package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.store.memory.InMemoryLimitStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An adaptive pool through the admission core on a fake clock: the learned limit is what the pool
 * admits, an upstream Retry-After pauses it (new requests refused {@code upstream_overloaded} with
 * a Retry-After no shorter, queued ones held until it passes), a hot reload keeps the limit, and
 * two replicas keep one limit through the shared store.
 */
class AdaptivePoolTest extends AdaptivePoolFixture {
  AdaptivePoolTest() {
    super(2.0, new Tenant("t", TierPolicy.defaults("free")));
  }

  static PoolPolicy pool(int maxRequests, int minRequests) {
    return pool(maxRequests, minRequests, AdaptivePolicy.START_FLOOR);
  }

  static PoolPolicy pool(int maxRequests, int minRequests, double start) {
    return PoolPolicy.builder("p", maxRequests * 100L)
        .maxRequests(maxRequests)
        .retryAfter(
            Duration.ofSeconds(1),
            Duration.ofSeconds(5) /* below the upstream's pause: the pause wins */)
        .maxMessageTimeout(Duration.ofSeconds(30))
        .retryAfterJitter(0.3 /* jitter never takes a Retry-After below the pause either */)
        .adaptive(
            AdaptivePolicy.builder(minRequests * 100L, minRequests)
                .minSamples(5)
                .backoff(0.5)
                .start(start)
                .build())
        .build();
  }

  Decision decide(AdmissionController c, PoolPolicy p, long holdNanos, QueueHoldTest.Recorder w) {
    return decide(c, p, time.nanos() + 60 * SEC, holdNanos, w);
  }

  List<Permit> admitAll(AdmissionController c, PoolPolicy p) {
    List<Permit> permits = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      Decision d = decide(c, p, 0, null);
      if (!(d instanceof Decision.Admit a)) {
        break;
      }
      permits.add(a.permit());
    }
    return permits;
  }

  @Test
  void theLearnedLimitIsWhatThePoolAdmits() {
    PoolPolicy p = pool(32, 4);
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    assertThat(s.policy().maxRequests()).isEqualTo(4); // the floor, before the first tick
    assertThat(s.configuredPolicy().maxRequests()).isEqualTo(32);
    AdaptiveLimit a = s.adaptTick(time.nanos());
    assertThat(a).isNotNull();
    List<Permit> held = admitAll(c, p);
    assertThat(held).hasSize(4);
    // a saturated interval at the baseline: slow start grows it, the pool admits more at once
    long admitted = time.nanos();
    time.advance(Duration.ofMillis(1100));
    for (int i = 0; i < 5; i++) {
      s.onLatency(AdaptiveLimit.Signal.TTFT, 0.2 * SEC, admitted);
    }
    s.adaptTick(time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(5);
    assertThat(admitAll(c, p)).hasSize(1);
    // an overload of a request admitted after that change halves it (backoff 0.5): 5 → 4 (floor)
    held.get(0).release(Outcome.COMPLETED, time.nanos());
    time.advance(Duration.ofMillis(10));
    s.onUpstream(503, -1, time.nanos() - 1, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(4);
    assertThat(decide(c, p, 0, null)).isInstanceOf(Decision.Reject.class);
  }

  @Test
  void anUpstreamRetryAfterPausesThePoolAndNoRetryAfterIsShorter() {
    PoolPolicy p = pool(8, 8);
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    Permit first = ((Decision.Admit) decide(c, p, 0, null)).permit();
    time.advance(Duration.ofMillis(5));
    s.onUpstream(429, 12 * SEC, first.admittedAtNanos(), time.nanos());
    Decision d = decide(c, p, 0, null);
    assertThat(d).isInstanceOf(Decision.Reject.class);
    Decision.Reject r = (Decision.Reject) d;
    assertThat(r.reason()).isEqualTo(Reason.UPSTREAM_OVERLOADED);
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(12);
    assertThat(r.message()).contains("Retry-After");
    // a request that can wait longer than the pause is held, and starts when it passes
    QueueHoldTest.Recorder w = new QueueHoldTest.Recorder();
    assertThat(decide(c, p, 30 * SEC, w)).isInstanceOf(Decision.Queued.class);
    time.advance(Duration.ofSeconds(6));
    s.adaptTick(time.nanos());
    assertThat(w.calls()).isZero();
    time.advance(Duration.ofSeconds(6));
    s.adaptTick(time.nanos());
    assertThat(w.admitted).hasSize(1);
    assertThat(decide(c, p, 0, null)).isInstanceOf(Decision.Admit.class);
  }

  @Test
  void aHotReloadKeepsTheLearnedLimitClampedIntoTheNewBounds() {
    PoolPolicy p = pool(32, 4);
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    s.adoptShared(
        new io.sluice.core.adapt.LimitStore.Shared(
            0.5, AdaptiveLimit.Cause.GROW, 0, Double.NaN, Double.NaN),
        time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(16);
    PoolPolicy wider = pool(64, 4); // ceiling doubled: the same fraction, 32 slots
    c.reconfigure(List.of(wider), List.of(chat));
    assertThat(s.policy().maxRequests()).isEqualTo(32);
    s.adaptTick(time.nanos());
    assertThat(s.adaptive().snapshot(time.nanos()).cause())
        .isEqualTo(AdaptiveLimit.Cause.RECONFIGURE);
    assertThat(s.policy().maxRequests()).isEqualTo(32);
    // adaptive off: the configured numbers again
    PoolPolicy fixed =
        PoolPolicy.builder("p", 1000)
            .maxRequests(10)
            .maxMessageTimeout(Duration.ofSeconds(30))
            .retryAfterJitter(0.0)
            .build();
    c.reconfigure(List.of(fixed), List.of(chat));
    assertThat(s.policy().maxRequests()).isEqualTo(10);
    assertThat(s.adaptTick(time.nanos())).isNull();
  }

  @Test
  void twoReplicasKeepOneLimitThroughTheSharedStore() {
    PoolPolicy p = pool(32, 4);
    Clock wall = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);
    InMemoryLimitStore store =
        new InMemoryLimitStore(
            new Clock() {
              @Override
              public ZoneOffset getZone() {
                return ZoneOffset.UTC;
              }

              @Override
              public Clock withZone(java.time.ZoneId z) {
                return this;
              }

              @Override
              public Instant instant() {
                return wall.instant().plusNanos(time.nanos());
              }
            });
    AdmissionController a = controller(p);
    AdmissionController b = controller(p);
    AdaptiveCoordinator ca = new AdaptiveCoordinator(a, store, "ns_", time);
    AdaptiveCoordinator cb = new AdaptiveCoordinator(b, store, "ns_", time);
    ca.tick();
    cb.tick();
    // replica a learns (slow start) while b sees no traffic: b follows the pool's limit
    for (int i = 0; i < 4; i++) {
      long admitted = time.nanos();
      time.advance(Duration.ofMillis(1100));
      admitAll(a, p);
      for (int j = 0; j < 5; j++) {
        a.pool("p").onLatency(AdaptiveLimit.Signal.TTFT, 0.2 * SEC, admitted);
      }
      ca.tick();
      cb.tick();
    }
    int learned = a.pool("p").policy().maxRequests();
    assertThat(learned).isGreaterThan(4);
    assertThat(b.pool("p").policy().maxRequests()).isEqualTo(learned);
    // b sees an overload: the pool's limit shrinks (b sends a decrease at once), and a adopts it
    // at its next exchange, within one interval
    time.advance(Duration.ofMillis(100));
    b.pool("p").onUpstream(503, 3 * SEC, time.nanos(), time.nanos());
    cb.tick();
    time.advance(Duration.ofMillis(1000)); // a exchanges once per interval
    ca.tick();
    int shrunk = b.pool("p").policy().maxRequests();
    assertThat(shrunk).isLessThan(learned);
    assertThat(a.pool("p").policy().maxRequests()).isEqualTo(shrunk);
    assertThat(a.pool("p").adaptive().paused(time.nanos())).isTrue(); // b's pause too
    assertThat(a.pool("p").adaptive().snapshot(time.nanos()).cause())
        .isEqualTo(AdaptiveLimit.Cause.OVERLOAD);
  }

  @Test
  void anUpstream429SettlesAtWhatTheUpstreamTookOthersAnswersDoNotCount() {
    PoolPolicy p = pool(32, 4, AdaptivePolicy.START_CEILING);
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    List<Permit> held = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      held.add(((Decision.Admit) decide(c, p, 0, null)).permit());
    }
    time.advance(Duration.ofMillis(10));
    // Envoy's rate-limit filter (one tenant over quota), its overload manager, a Sluice refusal:
    // counted, the limit and the pause untouched
    s.onAnswer(held.get(0), 429, 30 * SEC, AnswerSource.ENVOY_RATELIMIT, time.nanos());
    s.onAnswer(held.get(1), 503, 30 * SEC, AnswerSource.ENVOY_OVERLOAD, time.nanos());
    s.onAnswer(held.get(2), 503, -1, AnswerSource.ENVOY_LOCAL, time.nanos());
    s.onAnswer(held.get(3), 429, 30 * SEC, AnswerSource.SLUICE, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(32);
    assertThat(s.adaptive().paused(time.nanos())).isFalse();
    assertThat(s.answers(AnswerSource.ENVOY_RATELIMIT)).isEqualTo(1);
    assertThat(s.answers(AnswerSource.UPSTREAM)).isZero();
    // the upstream's own 429 with 12 in flight: it took 11
    s.onAnswer(held.get(4), 429, SEC, AnswerSource.UPSTREAM, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(11);
    assertThat(s.adaptive().paused(time.nanos())).isFalse();
    // a second refusal of the same generation: the refused one no longer counts as running
    s.onAnswer(held.get(5), 429, SEC, AnswerSource.UPSTREAM, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(11);
    held.forEach(h -> h.release(Outcome.COMPLETED, time.nanos()));
    assertThat(s.answers(AnswerSource.UPSTREAM)).isEqualTo(2);
  }

  @Test
  void withAHalfShareA429EstimatesThePoolsTotal() {
    PoolPolicy p = pool(32, 4, AdaptivePolicy.START_CEILING);
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    s.applyShare(1600, 16, null, time.nanos()); // half of the pool on this replica
    List<Permit> held = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      held.add(((Decision.Admit) decide(c, p, 0, null)).permit());
    }
    time.advance(Duration.ofMillis(10));
    s.onAnswer(held.get(0), 429, SEC, AnswerSource.UPSTREAM, time.nanos());
    // 5 others here on half the pool, about 10 on the whole: the pool's limit 10, not 5
    assertThat(s.adaptive().requests()).isEqualTo(10);
    held.forEach(h -> h.release(Outcome.COMPLETED, time.nanos()));
  }
}
