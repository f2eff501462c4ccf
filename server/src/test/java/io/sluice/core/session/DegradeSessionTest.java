package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.EnginePriority;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The degrade ladder in {@link AdmissionSession} on a fake ticker: the headroom trigger, the wait
 * trigger falling through to the queue, reroute counted in (and released to) the target pool, the
 * tenant's reservation cut to the concise re-estimate, the release exactly once, and the engine
 * priority written at admission.
 */
class DegradeSessionTest {
  private static final long T0 = 1_800_000_000_000L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final List<SessionEvent> events = new ArrayList<>();
  private final Tenant tenant =
      new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 1_000_000, 1_000_000));

  private static ClassPolicy interactive(DegradePolicy ladder) {
    return OneSlotPool.INTERACTIVE.withDegrade(ladder);
  }

  private static DegradePolicy concise(Duration waitAbove, double headroomBelow) {
    return new DegradePolicy(
        waitAbove, headroomBelow, List.of(new DegradePolicy.Concise(20, "Be brief.", null)));
  }

  private Sessions sessions(AdmissionController controller) {
    return OneSlotPool.sessions(
        controller, quotas, ticker, clock, new AdmissionSessionTest.ManualTimer(), events::add);
  }

  private static AdmissionController controller(PoolPolicy... pools) {
    return new AdmissionController(
        List.of(pools),
        List.of(OneSlotPool.INTERACTIVE),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  private static byte[] chat(int maxTokens) {
    return ("{\"model\":\"gpt-4o\",\"max_tokens\":"
            + maxTokens
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}]}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private AdmissionSession decide(
      Sessions sessions,
      PoolPolicy pool,
      ClassPolicy cls,
      Tenant who,
      int maxTokens,
      AdmissionSessionTest.Front front) {
    return decide(sessions, pool, cls, who, chat(maxTokens), front);
  }

  private AdmissionSession decide(
      Sessions sessions,
      PoolPolicy pool,
      ClassPolicy cls,
      Tenant who,
      byte[] body,
      AdmissionSessionTest.Front front) {
    long now = ticker.nanos();
    Subject subject =
        new Subject(
            "chat",
            pool,
            cls,
            RequestFormat.OPENAI_CHAT,
            who,
            now,
            now + Duration.ofSeconds(30).toNanos(),
            null,
            Duration.ofSeconds(5).toNanos(),
            false,
            0,
            null,
            io.sluice.core.session.Signals.NONE);
    AdmissionSession s = sessions.open(subject, front, Runnable::run, SessionSteps.NONE);
    s.begin(false, false, -1, ticker.nanos());
    s.decideWithBody(body, 0, body.length, ticker.nanos());
    return s;
  }

  private List<String> skipped() {
    return events.stream()
        .filter(SessionEvent.DegradeSkipped.class::isInstance)
        .map(
            e ->
                ((SessionEvent.DegradeSkipped) e).rung()
                    + ":"
                    + ((SessionEvent.DegradeSkipped) e).cause())
        .toList();
  }

  @Test
  void headroomBelowTheLevel_admitsConcise_withTheReEstimateCounted() throws Exception {
    PoolPolicy pool = OneSlotPool.pool(1_000, 4);
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    ClassPolicy cls = interactive(concise(Duration.ZERO, 0.5));
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession full = decide(sessions, pool, cls, tenant, 500, f1);
    assertThat(full.running().plan().rung()).as("headroom 1.0: runs as asked").isNull();
    assertThat(full.running().plan().body()).isNull();
    PoolState state = Objects.requireNonNull(controller.pool("gpu"));
    assertThat(state.classHeadroom("interactive")).isLessThan(0.5);

    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession s = decide(sessions, pool, cls, tenant, 100, f2);

    assertThat(f2.calls).containsExactly("admitted(body)");
    assertThat(s.running().plan().rung()).isEqualTo("concise");
    assertThat(s.running().plan().trigger()).isEqualTo("headroom");
    assertThat(s.facts().decision().reason()).isEqualTo(Reason.DEGRADED);
    assertThat(Objects.requireNonNull(s.estimate()).outputReserveTokens()).isEqualTo(20);
    assertThat(JSON.readTree(s.running().plan().body()).path("max_tokens").asLong()).isEqualTo(20);
    long now = ticker.nanos();
    assertThat(state.snapshot(now).workInFlight()).isEqualTo(full.workUnits() + s.workUnits());
    assertThat(s.workUnits()).isLessThan(60);
    assertThat(events)
        .anySatisfy(
            e ->
                assertThat(e)
                    .isEqualTo(new SessionEvent.Degraded(s.subject(), "concise", "headroom")));

    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(s.release(Outcome.COMPLETED)).as("exactly once").isFalse();
    full.end(Outcome.CANCELLED);
    assertThat(state.snapshot(ticker.nanos()).workInFlight()).isZero();
    assertThat(state.snapshot(ticker.nanos()).requestsInFlight()).isZero();
  }

  @Test
  void waitTrigger_noRungFits_fallsThroughToTheQueue_andAShortWaitNeverTriesTheLadder() {
    PoolPolicy pool = OneSlotPool.pool(100_000, 1);
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession first =
        decide(sessions, pool, interactive(concise(Duration.ofNanos(1), 0)), tenant, 100, f1);
    assertThat(f1.calls).containsExactly("admitted(body)");

    // the one slot is taken: the concise version does not fit either; it waits as that version
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession second =
        decide(sessions, pool, interactive(concise(Duration.ofNanos(1), 0)), tenant, 100, f2);
    assertThat(f2.calls).containsExactly("held");
    assertThat(skipped()).containsExactly("concise:no_room");
    assertThat(Objects.requireNonNull(second.estimate()).outputReserveTokens()).isEqualTo(20);
    assertThat(second.facts().decision().reason())
        .as("degraded only when it starts")
        .isEqualTo(Reason.ADMITTED);
    assertThat(events).noneMatch(SessionEvent.Degraded.class::isInstance);

    // a threshold above the predicted wait: queued without trying the ladder
    events.clear();
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession third =
        decide(sessions, pool, interactive(concise(Duration.ofHours(1), 0)), tenant, 100, f3);
    assertThat(f3.calls).containsExactly("held");
    assertThat(skipped()).isEmpty();

    assertThat(third.running().plan().rung()).isNull();
    assertThat(Objects.requireNonNull(third.estimate()).outputReserveTokens()).isEqualTo(100);

    first.release(Outcome.COMPLETED); // the slot frees: the waiting concise version starts
    assertThat(f2.calls).containsExactly("held", "admitted(body)");
    assertThat(second.running().plan().rung()).isEqualTo("concise");
    assertThat(second.running().plan().trigger()).isEqualTo("wait");
    assertThat(second.facts().decision().reason()).isEqualTo(Reason.DEGRADED);
    assertThat(events).contains(new SessionEvent.Degraded(second.subject(), "concise", "wait"));
    second.release(Outcome.COMPLETED);
    third.end(Outcome.CANCELLED);
    PoolState state = Objects.requireNonNull(controller.pool("gpu"));
    assertThat(state.snapshot(ticker.nanos()).requestsInFlight()).isLessThanOrEqualTo(1);
  }

  @Test
  void headroomTriedFirst_noRungStartsIt_waitsAsTheConciseVersion_whateverItsWait() {
    PoolPolicy pool = OneSlotPool.pool(100_000, 1);
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    ClassPolicy cls = interactive(concise(Duration.ofHours(1), 0.99));
    AdmissionSession first =
        decide(sessions, pool, cls, tenant, 100, new AdmissionSessionTest.Front());
    assertThat(first.running().plan().rung()).as("the pool was empty").isNull();

    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession second = decide(sessions, pool, cls, tenant, 100, f);

    assertThat(f.calls).containsExactly("held");
    assertThat(skipped()).as("the rungs are tried once").containsExactly("concise:no_room");
    assertThat(Objects.requireNonNull(second.estimate()).outputReserveTokens())
        .as("waits as its concise version: the wait threshold (1 h) is not what fired")
        .isEqualTo(20);
    first.release(Outcome.COMPLETED);
    assertThat(f.calls).containsExactly("held", "admitted(body)");
    assertThat(second.running().plan().rung()).isEqualTo("concise");
    assertThat(second.running().plan().trigger()).isEqualTo("headroom");
    assertThat(events).contains(new SessionEvent.Degraded(second.subject(), "concise", "headroom"));
    second.release(Outcome.COMPLETED);
  }

  @Test
  void waitTrigger_firesOnTheAgeOfTheOldestWaitingRequest_whenThePredictionIsShorter() {
    PoolPolicy pool = OneSlotPool.pool(100_000, 1);
    // waits up to 10 s (the hold, 5 s, bounds it)
    ClassPolicy patient = OneSlotPool.interactive(Duration.ofSeconds(10));
    AdmissionController controller =
        new AdmissionController(
            List.of(pool),
            List.of(patient),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    Sessions sessions = sessions(controller);
    ClassPolicy noLadder = patient.withDegrade(concise(Duration.ofHours(1), 0));
    ClassPolicy ladder = patient.withDegrade(concise(Duration.ofMillis(3000), 0));
    AdmissionSession first =
        decide(sessions, pool, noLadder, tenant, 100, new AdmissionSessionTest.Front());
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession waiting = decide(sessions, pool, noLadder, tenant, 100, f2);
    assertThat(f2.calls).containsExactly("held");

    // just queued: the predicted wait is below the threshold, so the ladder is not tried
    AdmissionSessionTest.Front probe = new AdmissionSessionTest.Front();
    AdmissionSession early = decide(sessions, pool, ladder, tenant, 100, probe);
    assertThat(probe.calls).containsExactly("held");
    assertThat(skipped()).isEmpty();
    assertThat(Objects.requireNonNull(early.estimate()).outputReserveTokens()).isEqualTo(100);
    early.end(Outcome.CANCELLED);

    // 3.5 s later the head of the queue has waited longer than the threshold: the same request
    // now fires the wait trigger, and waits as its concise version
    ticker.advance(Duration.ofMillis(3500));
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession late = decide(sessions, pool, ladder, tenant, 100, f3);
    assertThat(f3.calls).containsExactly("held");
    assertThat(skipped()).containsExactly("concise:no_room");
    assertThat(Objects.requireNonNull(late.estimate()).outputReserveTokens()).isEqualTo(20);

    first.release(Outcome.COMPLETED);
    waiting.release(Outcome.COMPLETED);
    assertThat(late.running().plan().trigger()).isEqualTo("wait");
    late.release(Outcome.COMPLETED);
  }

  @Test
  void reroute_countsAgainstTheTargetPool_andReleasesThere() {
    PoolPolicy gpu = OneSlotPool.pool(1_000, 1);
    PoolPolicy small =
        PoolPolicy.builder("small", 1_000)
            .maxRequests(2)
            .retryAfterJitter(0.0)
            .defaultServiceTime(Duration.ofSeconds(1))
            .build();
    AdmissionController controller = controller(gpu, small);
    Sessions sessions = sessions(controller);
    ClassPolicy cls =
        interactive(
            new DegradePolicy(
                Duration.ofNanos(1),
                0,
                List.of(new DegradePolicy.Reroute("small", "x-backend", "small", "mini"))));
    AdmissionSession first =
        decide(sessions, gpu, cls, tenant, 100, new AdmissionSessionTest.Front());
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = decide(sessions, gpu, cls, tenant, 100, f);

    assertThat(f.calls).containsExactly("admitted(body)");
    assertThat(s.running().plan().rung()).isEqualTo("reroute");
    assertThat(s.running().plan().pool().name()).isEqualTo("small");
    assertThat(s.running().plan().headers()).isEqualTo(Map.of("x-backend", "small"));
    assertThat(s.running().plan().clearRouteCache()).isTrue();
    PoolState smallState = Objects.requireNonNull(controller.pool("small"));
    assertThat(smallState.snapshot(ticker.nanos()).requestsInFlight()).isEqualTo(1);
    assertThat(
            Objects.requireNonNull(controller.pool("gpu"))
                .snapshot(ticker.nanos())
                .requestsInFlight())
        .isEqualTo(1);

    s.end(Outcome.CANCELLED);
    first.release(Outcome.COMPLETED);
    assertThat(smallState.snapshot(ticker.nanos()).requestsInFlight()).isZero();
    assertThat(smallState.snapshot(ticker.nanos()).workInFlight()).isZero();
  }

  @Test
  void forbidden_isRefusedAsBefore_andCounted() {
    PoolPolicy pool = OneSlotPool.pool(1_000, 1);
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    ClassPolicy cls = interactive(concise(Duration.ofNanos(1), 0));
    AdmissionSession first =
        decide(sessions, pool, cls, tenant, 100, new AdmissionSessionTest.Front());
    long now = ticker.nanos();
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    Subject subject =
        new Subject(
            "chat",
            pool,
            cls,
            RequestFormat.OPENAI_CHAT,
            tenant,
            now,
            now + Duration.ofSeconds(30).toNanos(),
            null,
            0,
            false,
            0,
            null,
            io.sluice.core.session.Signals.NONE); // no queue-hold: refused
    AdmissionSession s = sessions.open(subject, f, Runnable::run, SessionSteps.NONE);
    s.forbidDegradation();
    byte[] body = chat(100);
    s.decideWithBody(body, 0, body.length, ticker.nanos());
    assertThat(f.calls).containsExactly("refused");
    assertThat(skipped()).containsExactly("all:forbidden");
    assertThat(s.running().refusalWaitNanos()).isGreaterThanOrEqualTo(0);
    first.release(Outcome.COMPLETED);
  }

  @Test
  void tenantTokenReservation_isCutToTheConciseReEstimate() {
    PoolPolicy pool = OneSlotPool.pool(1_000, 4);
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    ClassPolicy cls = interactive(concise(Duration.ZERO, 0.99));
    Tenant capped = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 1_000));
    AdmissionSession filler = // takes the headroom just below 0.99
        decide(
            sessions,
            pool,
            interactive(DegradePolicy.OFF),
            tenant,
            10,
            new AdmissionSessionTest.Front());
    AdmissionSession s = decide(sessions, pool, cls, capped, 500, new AdmissionSessionTest.Front());
    assertThat(s.running().plan().rung()).isEqualTo("concise");
    // 1,000 output tokens a minute: 500 reserved, then cut to 20; 980 left for the next
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession next = decide(sessions, pool, interactive(DegradePolicy.OFF), capped, 900, f2);
    assertThat(f2.calls).containsExactly("admitted(body)");
    s.end(Outcome.CANCELLED);
    next.end(Outcome.CANCELLED);
    filler.end(Outcome.CANCELLED);
  }

  @Test
  void enginePriority_isWrittenAtAdmission_inTheBodyAndAHeader() throws Exception {
    PoolPolicy pool = priorityPool();
    AdmissionController controller = controller(pool);
    Sessions sessions = sessions(controller);
    AdmissionSession s =
        decide(
            sessions, pool, OneSlotPool.INTERACTIVE, tenant, 100, new AdmissionSessionTest.Front());
    assertThat(s.running().plan().enginePriority())
        .isEqualTo("0"); // one class: rank 0 of max rank 0
    assertThat(JSON.readTree(s.running().plan().body()).path("priority").asInt()).isZero();
    assertThat(s.running().plan().headers()).isEqualTo(Map.of("x-prio", "0"));
    assertThat(s.running().plan().rung()).isNull();
    s.release(Outcome.COMPLETED);
  }

  /**
   * A body a Python engine reads differently from Sluice is refused 400 {@code invalid_request},
   * never forwarded with the client's own priority; one it reads the same way (a NaN elsewhere,
   * duplicate members) is rewritten, the NaN kept as the literal it was.
   */
  @Test
  void enginePriority_bodyReadDifferentlyByTheEngine_refusedInvalidRequest_elseRewritten()
      throws Exception {
    PoolPolicy pool = priorityPool();
    Sessions sessions = sessions(controller(pool));
    String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    AdmissionSessionTest.Front ok = new AdmissionSessionTest.Front();
    AdmissionSession s =
        decide(
            sessions,
            pool,
            OneSlotPool.INTERACTIVE,
            tenant,
            utf8(
                "{"
                    + messages
                    + ",\"priority\":-100,\"temperature\":NaN,\"n\":\"2\",\"max_tokens\":10}"),
            ok);
    assertThat(ok.calls).containsExactly("admitted(body)");
    String forwarded =
        new String(Objects.requireNonNull(s.running().plan().body()), StandardCharsets.UTF_8);
    assertThat(forwarded).contains("\"priority\":0", "\"temperature\":NaN").doesNotContain("-100");
    assertThat(s.running().plan().enginePriority()).isEqualTo("0");
    assertThat(s.estimate().outputReserveTokens()).as("n: \"2\" is two answers").isEqualTo(20);
    s.release(Outcome.COMPLETED);

    for (String body :
        List.of(
            "{" + messages + ",\"priority\":-100,\"n\":8.5}",
            "{" + messages + ",\"priority\":-100,\"max_tokens\":NaN}",
            "{" + messages + ",\"priority\":-100,\"n\":1000}",
            "{" + messages + ",\"priority\":-100} {}",
            "{\"priority\":-100,\"messages\":[],\"x\":" + "[".repeat(80) + "]".repeat(80) + "}",
            "priority: -100")) {
      AdmissionSessionTest.Front refused = new AdmissionSessionTest.Front();
      AdmissionSession r =
          decide(sessions, pool, OneSlotPool.INTERACTIVE, tenant, utf8(body), refused);
      assertThat(refused.calls).as(body).containsExactly("refused");
      assertThat(refused.refusedWith).as(body).isEqualTo(Reason.INVALID_REQUEST);
      assertThat(refused.refusedStatus).isEqualTo(400);
      assertThat(r.running().plan().body()).isNull();
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static PoolPolicy priorityPool() {
    return PoolPolicy.builder("gpu", 1_000)
        .maxRequests(4)
        .maxMessageTimeout(Duration.ofSeconds(5))
        .retryAfterJitter(0.0)
        .defaultServiceTime(Duration.ofSeconds(1))
        .adaptive(io.sluice.core.policy.AdaptivePolicy.OFF)
        .fanout(io.sluice.core.policy.FanOutPolicy.NONE)
        .workflow(io.sluice.core.policy.WorkflowPolicy.OFF)
        .enginePriority(
            new EnginePriority(EnginePriority.Preset.SGLANG, "priority", "x-prio", Map.of()))
        .build();
  }
}
