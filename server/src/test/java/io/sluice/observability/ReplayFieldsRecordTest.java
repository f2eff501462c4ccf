package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.Outcome;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Sessions;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The fields a replay reads of a record (docs/replay.md "Records": schemaVersion, serviceMs,
 * ttftMs, endedAfterMs), on each way a request ends: completed, completed after a queue wait,
 * cancelled mid-answer, an upstream error, refused. Real sessions on a fake ticker; the one-slot
 * pool.
 */
class ReplayFieldsRecordTest {
  private static final long T0 = 1_800_000_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final List<String> lines = new ArrayList<>();
  private final List<Runnable> timerTasks = new ArrayList<>();
  private final Sessions sessions =
      OneSlotPool.sessions(
          OneSlotPool.controller(),
          new TenantQuotas(
              new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
              "test_",
              TenantQuotas.FailureMode.OPEN),
          ticker,
          clock,
          (delayNanos, task) -> {
            timerTasks.add(task);
            return () -> {};
          },
          new SessionRecorder(
              new AdmissionMetrics(new SimpleMeterRegistry(), ticker::nanos),
              new DecisionLog(DecisionLogSettings.every(), lines::add, null),
              List.of(new ReplayTimingPart(ticker))));

  /** Decided at its headers. */
  private AdmissionSession start(RecordingFront front) {
    long now = ticker.nanos();
    AdmissionSession session =
        sessions.open(
            OneSlotPool.chat(
                new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
                now,
                "op-" + now,
                Duration.ofSeconds(5).toNanos()),
            front,
            Runnable::run,
            SessionSteps.NONE);
    session.begin(true, true, 0, now);
    return session;
  }

  private static void chunk(AdmissionSession s, String text, boolean last) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    s.running().body(b, 0, b.length, last);
  }

  private AdmissionRecord only() throws Exception {
    assertThat(lines).hasSize(1);
    AdmissionRecord.Builder b = AdmissionRecord.newBuilder();
    JsonFormat.parser().merge(lines.get(0), b);
    lines.clear();
    return b.build();
  }

  @Test
  void completed_serviceFromAdmissionToEnd_ttftToTheFirstChunk_endedAfterFromArrival()
      throws Exception {
    AdmissionSession s = start(new RecordingFront(false));
    ticker.advance(Duration.ofMillis(80));
    s.running().headers(200, "text/event-stream", true);
    chunk(s, "data: {}\n\n", false);
    ticker.advance(Duration.ofMillis(170));
    chunk(s, "{\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":40}}", true);
    s.release(Outcome.COMPLETED);

    AdmissionRecord r = only();
    assertThat(r.getSchemaVersion()).isEqualTo(SessionRecorder.RECORD_SCHEMA_VERSION).isEqualTo(2);
    assertThat(r.getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_COMPLETED);
    assertThat(r.hasServiceMs()).isTrue();
    assertThat(r.getServiceMs()).isEqualTo(250);
    assertThat(r.hasTtftMs()).isTrue();
    assertThat(r.getTtftMs()).isEqualTo(80);
    assertThat(r.getEndedAfterMs()).isEqualTo(250);
  }

  @Test
  void completedAfterAQueueWait_serviceExcludesTheWait_endedAfterIncludesIt() throws Exception {
    AdmissionSession first = start(new RecordingFront(false)); // holds the only slot
    RecordingFront f = new RecordingFront(false);
    AdmissionSession second = start(f);
    assertThat(f.calls).containsExactly("held");
    ticker.advance(Duration.ofMillis(500));
    first.release(Outcome.COMPLETED);
    lines.clear();
    assertThat(f.calls).containsExactly("held", "admitted");
    ticker.advance(Duration.ofMillis(120));
    second.running().headers(200, "text/event-stream", true);
    chunk(second, "data: {}\n\n", false);
    ticker.advance(Duration.ofMillis(180));
    chunk(second, "data: [DONE]\n\n", true);
    second.release(Outcome.COMPLETED);

    AdmissionRecord r = only();
    assertThat(r.getQueueWaitMs()).isEqualTo(500);
    assertThat(r.getServiceMs()).isEqualTo(300);
    assertThat(r.getTtftMs()).as("from its admission, not its arrival").isEqualTo(120);
    assertThat(r.getEndedAfterMs()).isEqualTo(800);
  }

  @Test
  void timing_onTheTickerToTheNanosecond_arrivalDecisionAdmissionEnd() throws Exception {
    ticker.advance(Duration.ofNanos(123_456));
    AdmissionSession first = start(new RecordingFront(false)); // holds the only slot
    long firstArrival = ticker.nanos();
    ticker.advance(Duration.ofNanos(250_000)); // the second within the same millisecond
    long arrival = ticker.nanos();
    AdmissionSession second = start(new RecordingFront(false));
    ticker.advance(Duration.ofNanos(500_700_001));
    first.release(Outcome.COMPLETED);
    io.sluice.api.v1.ReplayTiming t1 = only().getTiming();
    assertThat(t1.getArrivalTickNs()).isEqualTo(firstArrival);
    assertThat(t1.getDecidedAfterNs()).isZero();
    assertThat(t1.hasAdmittedAfterNs()).isTrue();
    assertThat(t1.getAdmittedAfterNs()).isZero(); // admitted as it arrived
    assertThat(t1.getEndedAfterNs()).isEqualTo(250_000 + 500_700_001);
    ticker.advance(Duration.ofNanos(300_000_003));
    second.release(Outcome.COMPLETED);

    io.sluice.api.v1.ReplayTiming t = only().getTiming();
    assertThat(t.getArrivalTickNs()).isEqualTo(arrival);
    assertThat(t.getDecidedAfterNs()).as("queued as it arrived").isZero();
    assertThat(t.getAdmittedAfterNs()).isEqualTo(500_700_001);
    assertThat(t.getEndedAfterNs()).isEqualTo(500_700_001 + 300_000_003);
    assertThat(t.getDeadlineAfterNs())
        .as("the class's 30 s")
        .isEqualTo(Duration.ofSeconds(30).toNanos());
  }

  @Test
  void cancelledMidAnswer_endsWhenTheClientLeft_noTtftWithoutAChunk() throws Exception {
    AdmissionSession s = start(new RecordingFront(false));
    ticker.advance(Duration.ofMillis(120));
    s.release(Outcome.CANCELLED);

    AdmissionRecord r = only();
    assertThat(r.getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_CANCELLED);
    assertThat(r.getServiceMs()).isEqualTo(120);
    assertThat(r.getEndedAfterMs()).isEqualTo(120);
    assertThat(r.hasTtftMs()).as("no chunk came").isFalse();
  }

  @Test
  void upstreamError_keepsItsStatusAndTimes() throws Exception {
    AdmissionSession s = start(new RecordingFront(false));
    ticker.advance(Duration.ofMillis(40));
    s.running().headers(502, "application/json", true);
    chunk(s, "{\"error\":\"bad gateway\"}", true);
    s.release(Outcome.ERROR);

    AdmissionRecord r = only();
    assertThat(r.getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_ERROR);
    assertThat(r.getUpstreamStatus()).isEqualTo(502);
    assertThat(r.getServiceMs()).isEqualTo(40);
    assertThat(r.getEndedAfterMs()).isEqualTo(40);
  }

  @Test
  void refusedAtItsBody_endedAfterCountsTheBodysWait() throws Exception {
    start(new RecordingFront(false)); // holds the only slot
    RecordingFront f = new RecordingFront(false);
    long arrived = ticker.nanos();
    AdmissionSession s =
        sessions.open(
            OneSlotPool.chat(
                new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
                arrived,
                "op-late",
                Duration.ofSeconds(5).toNanos()),
            f,
            Runnable::run,
            SessionSteps.NONE);
    s.begin(false, false, -1, arrived); // asks for its body
    ticker.advance(Duration.ofMillis(300)); // a slow upload
    s.decideWithEstimate(
        new io.sluice.core.estimate.TokenEstimate(
            10, 10, "test", null, null, true, false, io.sluice.core.estimate.FanOut.NONE, -1),
        ticker.nanos());
    ticker.advance(Duration.ofMillis(2_100)); // past the class's maxQueueWait
    new ArrayList<>(timerTasks).forEach(Runnable::run);
    assertThat(f.calls).containsExactly("held", "refused queue_timeout");

    AdmissionRecord r = only();
    assertThat(r.getQueueWaitMs()).isEqualTo(2_100);
    assertThat(r.getEndedAfterMs())
        .as("arrival to refusal: the body's wait and the queue's")
        .isEqualTo(2_400);
  }

  @Test
  void refusedAfterAWait_hasNoServiceTime_endedAfterIsTheWait() throws Exception {
    start(new RecordingFront(false)); // holds the only slot
    lines.clear();
    RecordingFront f = new RecordingFront(false);
    start(f);
    ticker.advance(Duration.ofMillis(2_100)); // past the class's maxQueueWait
    new ArrayList<>(timerTasks).forEach(Runnable::run);
    assertThat(f.calls).containsExactly("held", "refused queue_timeout");

    AdmissionRecord r = only();
    assertThat(r.getSchemaVersion()).isEqualTo(2);
    assertThat(r.hasServiceMs()).as("nothing ran").isFalse();
    assertThat(r.hasTtftMs()).isFalse();
    assertThat(r.getEndedAfterMs()).isEqualTo(2_100);
  }
}
