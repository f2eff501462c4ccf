package io.sluice.core.adapt;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The adaptive limit's rules on a fake clock: a simulated upstream with {@code K} batch slots whose
 * latency grows as {@code active / K} beyond them (processor sharing, like the harness's simulated
 * LLM), driven one interval at a time.
 */
class AdaptiveLimitTest {
  static final long SEC = 1_000_000_000L;
  static final int K = 16;
  static final double TTFT = 0.3 * SEC;
  static final double TPOT = 0.02 * SEC;

  /** Starting at the floor (the rules' tests; {@code start} has tests of its own). */
  static AdaptivePolicy settings() {
    return ceilingStart().withStart(AdaptivePolicy.START_FLOOR);
  }

  /** The default start: the ceiling. */
  static AdaptivePolicy ceilingStart() {
    return AdaptivePolicy.builder(8_000, 4).build();
  }

  /** 32 request slots and 64000 work units at most (the ceiling), 4 slots / 8000 units at least. */
  static PoolPolicy pool() {
    return pool(settings());
  }

  static PoolPolicy pool(AdaptivePolicy settings) {
    return PoolPolicy.builder("p", 64_000).maxRequests(32).adaptive(settings).build();
  }

  /** One interval of a saturated pool on the knee curve: latency × max(1, L / K) × noise. */
  static void interval(AdaptiveLimit a, long[] now, Random rnd, double noise, int knee) {
    int limit = a.requests();
    double stretch = Math.max(1.0, (double) limit / knee);
    long admitted = now[0];
    now[0] += SEC / 2;
    for (int i = 0; i < 20; i++) {
      double n = 1 + noise * (2 * rnd.nextDouble() - 1);
      a.onLatency(AdaptiveLimit.Signal.TTFT, TTFT * stretch * n, admitted);
      a.onLatency(AdaptiveLimit.Signal.TPOT, TPOT * stretch * n, admitted);
    }
    now[0] += SEC / 2;
    a.tick(now[0], 1.0);
  }

  @Test
  void startsAtTheFloorAndSlowStartsUpToTheKnee() {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(), now[0]);
    assertThat(a.requests()).isEqualTo(4);
    assertThat(a.work()).isEqualTo(8_000);
    Random rnd = new Random(1);
    int steps = 0;
    while (a.requests() < K && steps < 20) {
      interval(a, now, rnd, 0.0, K);
      steps++;
    }
    // slow start: 4 → 5 → 7 → 11 → 19 (the step doubles) reaches the knee in a few intervals
    assertThat(steps).isLessThanOrEqualTo(5);
    for (int i = 0; i < 60; i++) {
      interval(a, now, rnd, 0.0, K);
    }
    assertThat(a.requests()).isBetween(K, (int) Math.ceil(K * 1.25));
  }

  /**
   * The knee bound: on a steady saturating load with ±10 % latency noise, after learning, the limit
   * stays within ±25 % of the knee and its mean within [0.9, 1.3] × the knee (the dead band); it
   * changes direction (a shrink after a growth or the reverse) at most once every 5 intervals on
   * average: no oscillation.
   */
  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
  void convergesToTheKneeAndStaysThereUnderNoise(long seed) {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(), now[0]);
    Random rnd = new Random(seed);
    for (int i = 0; i < 60; i++) {
      interval(a, now, rnd, 0.1, K);
    }
    double sum = 0;
    int n = 300;
    int turns = 0;
    int lastDir = 0;
    int prev = a.requests();
    for (int i = 0; i < n; i++) {
      interval(a, now, rnd, 0.1, K);
      int r = a.requests();
      assertThat(r).isBetween((int) (K * 0.75), (int) (K * 1.25));
      int dir = Integer.signum(r - prev);
      if (dir != 0 && lastDir != 0 && dir != lastDir) {
        turns++;
      }
      if (dir != 0) {
        lastDir = dir;
      }
      prev = r;
      sum += r;
    }
    // on this curve the latency ratio is L / K beyond the knee: the dead band [1.1, 1.3] holds it
    assertThat(sum / n).isBetween(K * 0.9, K * 1.3);
    assertThat(turns).isLessThanOrEqualTo(n / 5);
  }

  @Test
  void holdsWhileTheLoadDoesNotUseItsLimit() {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(), now[0]);
    for (int i = 0; i < 30; i++) {
      long admitted = now[0];
      now[0] += SEC;
      for (int j = 0; j < 20; j++) {
        a.onLatency(AdaptiveLimit.Signal.TTFT, TTFT, admitted);
      }
      a.tick(now[0], 0.3); // a third of the limit in use: more would not be used
    }
    assertThat(a.requests()).isEqualTo(4);
  }

  @Test
  void anOverloadBurstShrinksOncePerGenerationOfRequests() {
    long[] now = {0};
    AdaptiveLimit a = new AdaptiveLimit(pool(), 0.75, now[0]); // 24 slots
    now[0] += SEC;
    long admitted = now[0];
    now[0] += SEC;
    for (int i = 0; i < 30; i++) { // thirty 503s of requests admitted under the old limit
      a.onUpstream(503, -1, admitted, now[0]);
    }
    assertThat(a.fraction()).isCloseTo(0.75 * 0.7, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(a.snapshot(now[0]).cause()).isEqualTo(AdaptiveLimit.Cause.OVERLOAD);
    // a request admitted after the decrease that is refused too: one more decrease
    now[0] += SEC;
    a.onUpstream(429, -1, now[0] - SEC / 2, now[0]);
    assertThat(a.fraction()).isCloseTo(0.75 * 0.7 * 0.7, org.assertj.core.data.Offset.offset(1e-9));
    // a 500 is an upstream error, not an overload signal
    now[0] += SEC;
    assertThat(a.onUpstream(500, -1, now[0], now[0] + 1)).isFalse();
    assertThat(a.overloads()).isEqualTo(31);
  }

  @Test
  void anUpstreamRetryAfterPausesUntilItPassesCappedByMaxPause() {
    long[] now = {0};
    AdaptiveLimit a = new AdaptiveLimit(pool(), 1.0, now[0]);
    now[0] += SEC;
    assertThat(a.onUpstream(429, 5 * SEC, now[0] - 1, now[0])).isTrue();
    assertThat(a.pauseRemainingNanos(now[0])).isEqualTo(5 * SEC);
    assertThat(a.paused(now[0] + 5 * SEC - 1)).isTrue();
    assertThat(a.paused(now[0] + 5 * SEC)).isFalse();
    // an hour is capped at maxPause (30 s); a shorter one does not shorten a pause
    a.onUpstream(503, 3600 * SEC, now[0] - 1, now[0]);
    assertThat(a.pauseRemainingNanos(now[0])).isEqualTo(30 * SEC);
    a.onUpstream(503, SEC, now[0] - 1, now[0]);
    assertThat(a.pauseRemainingNanos(now[0])).isEqualTo(30 * SEC);
  }

  @Test
  void afterAShrinkItRampsBackOneStepPerIntervalNeverJumping() {
    long[] now = {0};
    AdaptiveLimit a = new AdaptiveLimit(pool(), 1.0, now[0]); // 32 slots
    now[0] += SEC;
    a.onUpstream(503, -1, now[0], now[0]);
    int after = a.requests();
    assertThat(after).isEqualTo(22); // 32 × 0.7
    Random rnd = new Random(3);
    int prev = after;
    for (int i = 0; i < 10; i++) {
      interval(a, now, rnd, 0.0, 64); // the upstream recovered: latency at its baseline
      assertThat(a.requests() - prev).isBetween(0, 1); // additive: one slot per interval
      prev = a.requests();
    }
    assertThat(a.requests()).isEqualTo(after + 10);
    assertThat(a.snapshot(now[0]).cause()).isEqualTo(AdaptiveLimit.Cause.GROW);
  }

  @Test
  void latencyAboveTheBandShrinksTowardsIt() {
    long[] now = {0};
    AdaptiveLimit a = new AdaptiveLimit(pool(), 1.0, now[0]); // 32 slots on a 16-slot upstream
    Random rnd = new Random(4);
    // the baseline is learned at a lighter load first (interval medians at 1×)
    for (int i = 0; i < 3; i++) {
      interval(a, now, rnd, 0.0, 64);
    }
    interval(a, now, rnd, 0.0, K); // 32 on 16: latency 2× the baseline
    assertThat(a.snapshot(now[0]).cause()).isEqualTo(AdaptiveLimit.Cause.LATENCY);
    // gradient 1.1 / 2 = 0.55, floored at backoff 0.7: 32 → 22 (not in one jump to the knee)
    assertThat(a.requests()).isEqualTo(22);
  }

  @Test
  void samplesOfRequestsAdmittedBeforeTheLastChangeAreNotCounted() {
    long[] now = {0};
    AdaptiveLimit a = new AdaptiveLimit(pool(), 0.5, now[0]);
    Random rnd = new Random(5);
    interval(a, now, rnd, 0.0, 64);
    long before = now[0];
    now[0] += SEC;
    a.onUpstream(503, -1, now[0], now[0]); // a change
    double f = a.fraction();
    now[0] += SEC;
    for (int i = 0; i < 50; i++) { // slow answers of requests admitted before it
      a.onLatency(AdaptiveLimit.Signal.TTFT, TTFT * 10, before);
    }
    a.tick(now[0] + 2 * SEC, 1.0);
    assertThat(a.fraction()).isEqualTo(f);
  }

  @Test
  void adoptsThePoolsSharedLimitAndBaselines() {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(), now[0]);
    now[0] += SEC;
    assertThat(a.adopt(0.5, AdaptiveLimit.Cause.GROW, 2_000_000_000L, TTFT, TPOT, now[0])).isTrue();
    assertThat(a.requests()).isEqualTo(16);
    assertThat(a.snapshot(now[0]).cause()).isEqualTo(AdaptiveLimit.Cause.GROW);
    assertThat(a.snapshot(now[0]).slowStart()).isFalse(); // the pool learned already
    assertThat(a.paused(now[0] + SEC)).isTrue();
    assertThat(a.baseline(AdaptiveLimit.Signal.TTFT, now[0])).isEqualTo(TTFT);
    assertThat(a.measuredBaseline(AdaptiveLimit.Signal.TTFT, now[0])).isNaN();
    assertThat(a.changes(AdaptiveLimit.Cause.SHARED)).isEqualTo(1);
  }

  @Test
  void startsWhereStartSaysWithNoLearnedLimit() {
    assertThat(AdaptiveLimit.starting(pool(ceilingStart()), 0).requests()).isEqualTo(32);
    assertThat(AdaptiveLimit.starting(pool(ceilingStart().withStart(0.0)), 0).requests())
        .isEqualTo(4);
    assertThat(AdaptiveLimit.starting(pool(ceilingStart().withStart(0.25)), 0).requests())
        .isEqualTo(8);
    // below the floor: the floor
    assertThat(AdaptiveLimit.starting(pool(ceilingStart().withStart(0.05)), 0).requests())
        .isEqualTo(4);
    // the pool's effective numbers before the limit is made are the same
    assertThat(LimitBounds.requestsOf(pool(ceilingStart().withStart(0.25)), Double.NaN))
        .isEqualTo(8);
    assertThat(LimitBounds.workOf(pool(ceilingStart()), Double.NaN)).isEqualTo(64_000);
    // a learned limit (a reload's) wins over start
    assertThat(new AdaptiveLimit(pool(ceilingStart()), 0.5, 0).requests()).isEqualTo(16);
  }

  @Test
  void slowStartGrowsFromWhereItStartsNotFromTheFloor() {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(ceilingStart().withStart(0.25)), now[0]);
    assertThat(a.snapshot(now[0]).slowStart()).isTrue();
    Random rnd = new Random(9);
    interval(a, now, rnd, 0.0, 64); // the baseline at a light load
    interval(a, now, rnd, 0.0, 64);
    // 8 → 9 → 11 → 15 → 22 → 32: multiplicative from 8, at most × 1.5 per generation
    int steps = 0;
    while (a.requests() < 32 && steps < 10) {
      interval(a, now, rnd, 0.0, 64);
      steps++;
    }
    assertThat(steps).isLessThanOrEqualTo(5);
  }

  /**
   * A generation is a number of answers, not an interval: at a limit of 2 whose answers take a
   * second, three answers (1.5 s) decide, where ten samples per one-second interval never came.
   */
  @Test
  void aSmallLimitWithSlowAnswersStillDecides() {
    AdaptivePolicy s = AdaptivePolicy.builder(1_000, 1).build().withStart(2.0 / 16);
    PoolPolicy p = PoolPolicy.builder("p", 16_000).maxRequests(16).adaptive(s).build();
    long now = 0;
    AdaptiveLimit a = AdaptiveLimit.starting(p, now);
    assertThat(a.requests()).isEqualTo(2);
    assertThat(a.generation()).isEqualTo(AdaptiveLimit.MIN_GENERATION);
    long since = now;
    int changesAt = -1;
    // two answers a second at the baseline (each took a second), the pool full; ticks every 100 ms
    for (int t = 1; t <= 40 && changesAt < 0; t++) {
      now += SEC / 10;
      if (t % 5 == 0) {
        a.onLatency(AdaptiveLimit.Signal.TTFT, TTFT, since);
      }
      if (a.tick(now, 1.0)) {
        changesAt = t;
      }
    }
    assertThat(changesAt).isBetween(1, 20); // within 2 s
    assertThat(a.requests()).isEqualTo(3);
    assertThat(a.snapshot(now).cause()).isEqualTo(AdaptiveLimit.Cause.SLOW_START);
  }

  @Test
  void anUpstream429WithNInFlightSettlesAtNMinusOnceAGeneration() {
    long now = SEC;
    AdaptiveLimit a = AdaptiveLimit.starting(pool(ceilingStart()), 0);
    // 11 in flight (this one included): the upstream took 10
    assertThat(a.onUpstream(429, SEC, now - 1, now, 11, 11 * 2000)).isTrue();
    assertThat(a.requests()).isEqualTo(10);
    assertThat(a.snapshot(now).cause()).isEqualTo(AdaptiveLimit.Cause.OVERLOAD);
    assertThat(a.paused(now)).isFalse(); // 10 is above the floor: no pause
    // more 429s of requests admitted before that decrease: the same generation, no change
    for (int i = 0; i < 20; i++) {
      assertThat(a.onUpstream(429, SEC, now - 1, now + i, 11, 11 * 2000)).isFalse();
    }
    assertThat(a.requests()).isEqualTo(10);
    // a request admitted after it refused with 11 in flight: already at 10, no lower
    now += SEC;
    a.onUpstream(429, SEC, now - 1, now, 11, 11 * 2000);
    assertThat(a.requests()).isEqualTo(10);
    // refused at 3 in flight: below the floor (4), the floor, and the Retry-After pauses
    now += SEC;
    a.onUpstream(429, 2 * SEC, now - 1, now, 3, 3 * 2000);
    assertThat(a.requests()).isEqualTo(4);
    assertThat(a.pauseRemainingNanos(now)).isEqualTo(2 * SEC);
  }

  @Test
  void anOutageProbesAtTheFloorAndTheFirstSuccessRestoresTheLimit() {
    long now = SEC;
    AdaptiveLimit a = new AdaptiveLimit(pool(ceilingStart()), 0.75, 0); // 24 slots
    long during = now;
    assertThat(a.onUpstream(503, 2 * SEC, now - 1, now, 20, 40_000)).isTrue();
    assertThat(a.requests()).isEqualTo(4);
    assertThat(a.inOutage()).isTrue();
    assertThat(a.snapshot(now).cause()).isEqualTo(AdaptiveLimit.Cause.OUTAGE);
    // a short probe pause (half an interval), not the whole Retry-After
    assertThat(a.pauseRemainingNanos(now)).isEqualTo(SEC / 2);
    // a success of a request admitted before the outage says nothing of the upstream now
    assertThat(a.onUpstream(200, -1, now - 1, now + 1, 5, 10_000)).isFalse();
    // probes refused: the floor, a short pause each generation
    now += SEC;
    a.onUpstream(503, 2 * SEC, now - 1, now, 4, 8_000);
    assertThat(a.requests()).isEqualTo(4);
    assertThat(a.pauseRemainingNanos(now)).isEqualTo(SEC / 2);
    // the first success of a probe: the limit before the outage, at once
    now += SEC;
    assertThat(a.onUpstream(200, -1, during + 1, now, 4, 8_000)).isTrue();
    assertThat(a.requests()).isEqualTo(24);
    assertThat(a.inOutage()).isFalse();
    assertThat(a.paused(now)).isFalse();
    assertThat(a.snapshot(now).cause()).isEqualTo(AdaptiveLimit.Cause.RECOVERED);
  }

  @Test
  void anOutageWhoseProbesCannotRunEndsWhenItsLastRetryAfterPasses() {
    long now = SEC;
    AdaptiveLimit a = new AdaptiveLimit(pool(ceilingStart()), 0.75, 0); // 24 slots
    a.onUpstream(503, 2 * SEC, now - 1, now, 20, 40_000);
    assertThat(a.inOutage()).isTrue();
    // a second outage answer a second later moves the end to its own Retry-After
    now += SEC;
    a.onUpstream(503, 2 * SEC, now - 1, now, 18, 36_000);
    long end = now + 2 * SEC;
    // no probe answers (the floor's slots are held by answers admitted before the outage)
    assertThat(a.tick(end - 1, 1.0)).isFalse();
    assertThat(a.inOutage()).isTrue();
    assertThat(a.requests()).isEqualTo(4);
    assertThat(a.tick(end, 1.0)).isTrue();
    assertThat(a.inOutage()).isFalse();
    assertThat(a.requests()).isEqualTo(24);
    assertThat(a.snapshot(end).cause()).isEqualTo(AdaptiveLimit.Cause.RECOVERED);
    // a fresh 503 after that is a new outage
    assertThat(a.onUpstream(503, 2 * SEC, end + 1, end + 2, 20, 40_000)).isTrue();
    assertThat(a.inOutage()).isTrue();
    assertThat(a.requests()).isEqualTo(4);
  }

  /**
   * From a cold start at the ceiling the limit is far above what runs: a latency verdict shrinks
   * from what the pool held, not from the unused limit (32 → 14 in one verdict, not 32 → 22).
   */
  @Test
  void aLatencyShrinkStartsFromWhatWasHeldNotFromAnUnusedLimit() {
    long[] now = {0};
    AdaptiveLimit a = AdaptiveLimit.starting(pool(ceilingStart()), now[0]);
    Random rnd = new Random(6);
    for (int i = 0; i < 3; i++) { // the baseline, at a light load
      long admitted = now[0];
      now[0] += SEC;
      for (int j = 0; j < 20; j++) {
        a.onLatency(AdaptiveLimit.Signal.TTFT, TTFT * (1 + 0.01 * rnd.nextDouble()), admitted);
      }
      a.tick(now[0], 0.3);
    }
    assertThat(a.requests()).isEqualTo(32);
    long admitted = now[0];
    now[0] += SEC;
    for (int j = 0; j < 20; j++) {
      a.onLatency(AdaptiveLimit.Signal.TTFT, 2 * TTFT, admitted);
    }
    a.tick(now[0], 20.0 / 32); // 20 of 32 held, latency 2× the baseline
    // 20 × max(backoff 0.7, 1.1 / 2) = 14
    assertThat(a.requests()).isEqualTo(14);
    assertThat(a.snapshot(now[0]).cause()).isEqualTo(AdaptiveLimit.Cause.LATENCY);
  }

  /** Property: whatever the signals, the limit stays within [floor, ceiling]. */
  @ParameterizedTest
  @ValueSource(longs = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26})
  void neverLeavesItsBounds(long seed) {
    Random rnd = new Random(seed);
    long[] now = {rnd.nextLong()}; // ticker values may be anywhere, negative too
    AdaptiveLimit a = new AdaptiveLimit(pool(), rnd.nextDouble() * 2 - 0.5, now[0]);
    for (int i = 0; i < 2_000; i++) {
      now[0] += (long) (rnd.nextDouble() * SEC);
      switch (rnd.nextInt(5)) {
        case 0 ->
            a.onLatency(
                AdaptiveLimit.Signal.values()[rnd.nextInt(2)],
                rnd.nextDouble() * 10 * SEC,
                now[0] - (long) (rnd.nextDouble() * 3 * SEC));
        case 1 ->
            a.onUpstream(
                new int[] {200, 429, 503, 529, 500}[rnd.nextInt(5)],
                rnd.nextBoolean() ? -1 : (long) (rnd.nextDouble() * 100 * SEC),
                now[0] - (long) (rnd.nextDouble() * 3 * SEC),
                now[0]);
        case 2 -> a.tick(now[0], rnd.nextDouble() * 1.5);
        case 3 ->
            a.adopt(
                rnd.nextDouble() * 2 - 0.5,
                AdaptiveLimit.Cause.values()[rnd.nextInt(AdaptiveLimit.Cause.values().length)],
                (long) (rnd.nextDouble() * 100 * SEC),
                rnd.nextDouble() * SEC,
                rnd.nextBoolean() ? Double.NaN : rnd.nextDouble() * SEC,
                now[0]);
        default -> {
          for (int j = 0; j < 15; j++) {
            a.onLatency(AdaptiveLimit.Signal.TPOT, TPOT * (1 + rnd.nextDouble()), now[0]);
          }
        }
      }
      assertThat(a.requests()).isBetween(4, 32);
      assertThat(a.work()).isBetween(8_000L, 64_000L);
      assertThat(a.fraction()).isBetween(0.125, 1.0);
      assertThat(a.pauseRemainingNanos(now[0])).isBetween(0L, 30 * SEC);
    }
  }
}
