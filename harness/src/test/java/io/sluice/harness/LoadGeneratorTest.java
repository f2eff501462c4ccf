package io.sluice.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.upstream.SimulatedLlmUpstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Smoke tests: short runs against the no-admission rig; counts must add up (no timing). */
class LoadGeneratorTest {
  private static final SimulatedLlmUpstream.Settings FAST =
      new SimulatedLlmUpstream.Settings(4, Duration.ZERO, Duration.ofMillis(1), 8, 64, 4);

  private static Workload workload(int maxRetries, double cancelFraction, Duration deadline) {
    return Workload.of(
        List.of(
            Workload.RequestClass.of(
                "chat",
                "interactive",
                "/v1/chat/completions",
                1,
                20,
                40,
                5,
                10,
                deadline,
                Duration.ofSeconds(1)),
            Workload.RequestClass.of(
                "batch",
                "batch",
                "/v1/chat/completions",
                1,
                20,
                40,
                5,
                10,
                deadline,
                Duration.ofSeconds(5))),
        List.of(new Workload.Tenant("a", 1), new Workload.Tenant("b", 3)),
        List.of(
            new Workload.Phase("low", Duration.ofMillis(500), 20),
            new Workload.Phase("high", Duration.ofMillis(500), 40)),
        cancelFraction,
        Duration.ofMillis(1),
        Duration.ofMillis(50),
        maxRetries,
        Duration.ofSeconds(5),
        1);
  }

  @Test
  void run_noAdmission_everyArrivalIsAccountedFor() throws InterruptedException {
    List<LoadGenerator.Progress> progress = new ArrayList<>();
    RunReport r;
    try (Rig rig = Rig.noAdmission("direct", FAST)) {
      r = new LoadGenerator(workload(0, 0, Duration.ofSeconds(5))).run(rig, progress::add);
    }
    assertThat(r.outcomes().offered()).isPositive();
    assertThat(r.outcomes().accountedFor()).isEqualTo(r.outcomes().offered());
    assertThat(r.outcomes().completed()).isPositive();
    assertThat(r.byClass().values().stream().mapToLong(RunReport.Split::offered).sum())
        .isEqualTo(r.outcomes().offered());
    assertThat(r.byTenant().values().stream().mapToLong(RunReport.Split::completed).sum())
        .isEqualTo(r.outcomes().completed());
    assertThat(r.timeline().stream().mapToLong(RunReport.Second::offered).sum())
        .isEqualTo(r.outcomes().offered());
    assertThat(r.tokens().spent()).isGreaterThanOrEqualTo(r.tokens().useful());
    assertThat(r.tokens().useful()).isPositive();
    assertThat(r.outcomes().attempts()).isEqualTo(r.outcomes().offered());
  }

  @Test
  void run_throttlingUpstream_refusalsCarryRetryAfterAndRetriesAreBounded()
      throws InterruptedException {
    RunReport r;
    try (Rig rig = Rig.noAdmission("throttled", FAST)) {
      rig.upstream().throttle(429, Duration.ofSeconds(1));
      r = new LoadGenerator(workload(1, 0, Duration.ofSeconds(3))).run(rig, p -> {});
    }
    assertThat(r.outcomes().completed()).isZero();
    assertThat(r.outcomes().accountedFor()).isEqualTo(r.outcomes().offered());
    assertThat(r.outcomes().rejectedFinal()).containsOnlyKeys("upstream_429");
    assertThat(r.refusals().withoutRetryAfter()).isZero();
    assertThat(r.refusals().withRetryAfter()).isEqualTo(r.outcomes().attempts());
    assertThat(r.outcomes().retries())
        .isEqualTo(r.outcomes().offered()); // one retry each, then refused for good
    assertThat(r.outcomes().attempts() + r.outcomes().unsent())
        .isEqualTo(r.outcomes().offered() + r.outcomes().retries());
  }

  @Test
  void run_clientsCancel_cancellationsAreCounted() throws InterruptedException {
    RunReport r;
    SimulatedLlmUpstream.Settings slow =
        new SimulatedLlmUpstream.Settings(2, Duration.ZERO, Duration.ofMillis(20), 8, 64, 4);
    try (Rig rig = Rig.noAdmission("cancel", slow)) {
      r = new LoadGenerator(workload(0, 1.0, Duration.ofSeconds(5))).run(rig, p -> {});
    }
    assertThat(r.outcomes().cancelled()).isPositive();
    assertThat(r.outcomes().accountedFor()).isEqualTo(r.outcomes().offered());
    // every client hangs up on its own within 50 ms: the waste is theirs, none on deadlines, and
    // the upstream stops when they leave (at most a token in flight each)
    // served on arrival, every answer (80 ms or more) outlasts its client: all its own hang-ups
    assertThat(r.tokens().onHangUps()).isPositive();
    assertThat(r.tokens().onHangUpsAfterWaiting()).isZero();
    assertThat(r.tokens().onMissedDeadlines()).isZero();
    assertThat(r.tokens().afterClientLeft()).isLessThanOrEqualTo(r.outcomes().cancelled());
    assertThat(r.tokens().wasted())
        .isEqualTo(
            r.tokens().onHangUps()
                + r.tokens().onHangUpsAfterWaiting()
                + r.tokens().onMissedDeadlines()
                + r.tokens().afterClientLeft()
                + r.tokens().otherWasted());
    assertThat(r.tokens().otherWasted()).isLessThanOrEqualTo(r.outcomes().cancelled());
    assertThat(r.tokens().wastedByAdmission())
        .isEqualTo(r.tokens().wasted() - r.tokens().onHangUps());
  }

  @Test
  void run_clientsLeaveBecauseTheyWaited_thatWasteIsCountedAsCausedByAdmission()
      throws InterruptedException {
    // one slot shared by all (no admission): 2 ms per token, answers of 5–10 tokens take at most
    // 18 ms alone, and every client leaves at 200 ms; served on arrival nobody would hang up
    // before the answer ends (floor 0), but at ~2.6x the slot's capacity the shared answers
    // outlast their clients. Which hang-ups happen depends on timing; their attribution does not.
    SimulatedLlmUpstream.Settings oneSlot =
        new SimulatedLlmUpstream.Settings(1, Duration.ZERO, Duration.ofMillis(2), 8, 64, 4);
    Workload w =
        Workload.of(
            List.of(
                Workload.RequestClass.of(
                    "chat",
                    "interactive",
                    "/v1/chat/completions",
                    1,
                    20,
                    40,
                    5,
                    10,
                    Duration.ofSeconds(5),
                    Duration.ofSeconds(1))),
            List.of(new Workload.Tenant("a", 1)),
            List.of(new Workload.Phase("p", Duration.ofMillis(500), 200)),
            1.0,
            Duration.ofMillis(200),
            Duration.ofMillis(200),
            0,
            Duration.ofSeconds(5),
            3);
    assertThat(LoadGenerator.wasteIfServedOnArrival(w, oneSlot).hungUpTokens()).isZero();
    RunReport r;
    try (Rig rig = Rig.noAdmission("one slot", oneSlot)) {
      r = new LoadGenerator(w).run(rig, p -> {});
    }
    assertThat(r.outcomes().accountedFor()).isEqualTo(r.outcomes().offered());
    assertThat(r.outcomes().cancelled()).isPositive();
    assertThat(r.tokens().onHangUps()).isZero(); // none of them would have left served on arrival
    assertThat(r.tokens().onHangUpsAfterWaiting()).isPositive();
    assertThat(r.tokens().wastedByAdmission()).isEqualTo(r.tokens().wasted()).isPositive();
  }

  @Test
  void arrivals_sameSeed_sameArrivalsAndCancellationsAsConfigured() {
    Workload w = workload(0, 0.5, Duration.ofSeconds(5));
    List<Arrivals.Arrival> a = Arrivals.arrivals(w);
    assertThat(Arrivals.arrivals(w)).isEqualTo(a);
    // 20/s for 0.5 s then 40/s for 0.5 s: Poisson around 30
    assertThat(a).hasSizeBetween(10, 60);
    assertThat(a).isSortedAccordingTo((x, y) -> Long.compare(x.atNanos(), y.atNanos()));
    assertThat(a)
        .allSatisfy(
            x -> {
              assertThat(x.atNanos()).isBetween(0L, w.duration().toNanos());
              assertThat(
                      x.cancelAfterNanos() == Long.MAX_VALUE
                          || x.cancelAfterNanos() >= 1_000_000
                              && x.cancelAfterNanos() <= 50_000_000)
                  .isTrue();
            });
    assertThat(a).anyMatch(x -> x.cancelAfterNanos() == Long.MAX_VALUE);
    assertThat(a).anyMatch(x -> x.cancelAfterNanos() != Long.MAX_VALUE);
  }

  @Test
  void arrivals_boundedInCount() {
    Workload w = workload(0, 0, Duration.ofSeconds(5));
    Workload capped =
        new Workload(
            w.classes(),
            w.tenants(),
            w.phases(),
            w.cancelFraction(),
            w.cancelMin(),
            w.cancelMax(),
            w.maxRetries(),
            w.drain(),
            w.seed(),
            5);
    assertThat(Arrivals.arrivals(capped)).hasSize(5);
    assertThat(Arrivals.arrivals(capped.scaled(10))).hasSize(5);
    assertThat(Arrivals.arrivals(capped))
        .isEqualTo(Arrivals.arrivals(w).subList(0, 5)); // the first five of the same draw
  }

  @Test
  void wasteIfServedOnArrival_countsPromptAndTokensGeneratedBeforeTheHangUp() {
    // no prefill, 10 ms per token, answers of exactly 10 tokens: the last token at 90 ms
    SimulatedLlmUpstream.Settings s =
        new SimulatedLlmUpstream.Settings(4, Duration.ZERO, Duration.ofMillis(10), 8, 64, 4);
    Workload everyoneLeavesAt45ms = fixed(1.0, Duration.ofMillis(45), Duration.ofSeconds(5));
    List<Arrivals.Arrival> arrivals = Arrivals.arrivals(everyoneLeavesAt45ms);
    long prompt = promptOf(s);
    LoadGenerator.ServedOnArrival w = LoadGenerator.wasteIfServedOnArrival(everyoneLeavesAt45ms, s);
    // tokens at 0, 10, 20, 30, 40 ms: five generated before the hang-up at 45 ms
    assertThat(w.hungUpTokens()).isEqualTo(arrivals.size() * (prompt + 5));
    assertThat(w.usefulTokens()).isZero();
    assertThat(w.hungUpFraction()).isEqualTo(1.0);

    Workload nobodyLeaves = fixed(0, Duration.ofMillis(45), Duration.ofSeconds(5));
    LoadGenerator.ServedOnArrival none = LoadGenerator.wasteIfServedOnArrival(nobodyLeaves, s);
    assertThat(none.hungUpTokens() + none.missedDeadlineTokens()).isZero();
    assertThat(none.usefulTokens())
        .isEqualTo(Arrivals.arrivals(nobodyLeaves).size() * (prompt + 10));

    Workload deadline50ms = fixed(0, Duration.ofMillis(45), Duration.ofMillis(50));
    LoadGenerator.ServedOnArrival late = LoadGenerator.wasteIfServedOnArrival(deadline50ms, s);
    assertThat(late.missedDeadlineTokens())
        .isEqualTo(Arrivals.arrivals(deadline50ms).size() * (prompt + 6));
    assertThat(late.missedDeadlineFraction()).isEqualTo(1.0);
  }

  private static long promptOf(SimulatedLlmUpstream.Settings s) {
    return SimulatedLlmUpstream.promptTokens(Arrivals.body(30, 10, 10).length, s);
  }

  /** Prompts of 30 tokens, answers of 10; {@code cancelFraction} leave exactly at {@code at}. */
  private static Workload fixed(double cancelFraction, Duration at, Duration deadline) {
    return Workload.of(
        List.of(
            Workload.RequestClass.of(
                "chat",
                "interactive",
                "/v1/chat/completions",
                1,
                30,
                30,
                10,
                10,
                deadline,
                Duration.ofSeconds(1))),
        List.of(new Workload.Tenant("a", 1)),
        List.of(new Workload.Phase("p", Duration.ofSeconds(1), 50)),
        cancelFraction,
        at,
        at,
        0,
        Duration.ofSeconds(5),
        7);
  }
}
