package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.intake.DispatchCheck;
import io.sluice.core.intake.DispatchStart;
import io.sluice.core.intake.Intake;
import io.sluice.core.intake.IntakeNote;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.LateIntake;
import io.sluice.core.intake.WhenLate;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryJobStore;
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
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Accept instead of refuse ({@link LateIntake}, a planner answering later through the session): on
 * {@link OneSlotPool} with a fake ticker and clock, a request of a class with {@code whenLate:
 * accept} that the pool refuses {@code deadline_unreachable} (at once) or {@code queue_timeout}
 * (out of its queue) is answered with the queued object only after the store acknowledged the job;
 * a store failure or a full backlog keeps the pool's refusal, typed as it was; what the request
 * held is given back exactly once, also when the front end goes away while the store writes; any
 * other refusal, another class, a dispatched job and shadow mode are never taken in.
 */
class LateIntakeSessionTest {
  private static final long HOLD = Duration.ofSeconds(5).toNanos();
  private static final long NOW = 1_800_000_000_000L;
  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final Tenant acme = new Tenant("acme", TierPolicy.defaults("pro"));
  private final Gated store = new Gated();
  private final List<AdmissionCheck.Release> releases = new ArrayList<>();
  private IntakePolicy policy =
      IntakePolicy.builder()
          .classes(Set.of())
          .whenLate(Map.of(OneSlotPool.INTERACTIVE.name(), WhenLate.ACCEPT))
          .build();

  /** The durable queue in memory, its enqueues held until the test lets them through. */
  static final class Gated implements JobStore {
    final InMemoryJobStore inner = new InMemoryJobStore(1000);
    CompletableFuture<Void> gate = CompletableFuture.completedFuture(null);
    int enqueues;
    int cancels;

    void hold() {
      gate = new CompletableFuture<>();
    }

    @Override
    public CompletionStage<Enqueued> enqueue(String prefix, NewJob job, Caps caps) {
      enqueues++;
      return gate.thenCompose(v -> inner.enqueue(prefix, job, caps));
    }

    @Override
    public CompletionStage<@Nullable JobView> read(
        String prefix, String tenant, String id, long now, long retention) {
      return inner.read(prefix, tenant, id, now, retention);
    }

    @Override
    public CompletionStage<@Nullable JobView> cancel(
        String prefix, String tenant, String id, long now, long retention) {
      cancels++;
      return inner.cancel(prefix, tenant, id, now, retention);
    }

    @Override
    public CompletionStage<@Nullable Claimed> claim(
        String prefix, String pool, String consumer, long now, long lease, long retention) {
      return inner.claim(prefix, pool, consumer, now, lease, retention);
    }

    @Override
    public CompletionStage<Boolean> complete(
        String prefix,
        String id,
        JobStatus status,
        byte @Nullable [] result,
        @Nullable String error,
        long now,
        long retention) {
      return inner.complete(prefix, id, status, result, error, now, retention);
    }

    @Override
    public CompletionStage<Boolean> start(String prefix, String id) {
      return inner.start(prefix, id);
    }

    @Override
    public CompletionStage<Boolean> release(
        String prefix, String id, int attempt, long now, long retention) {
      return inner.release(prefix, id, attempt, now, retention);
    }

    @Override
    public CompletionStage<Backlog> backlog(String prefix, String pool, long now, long retention) {
      return inner.backlog(prefix, pool, now, retention);
    }
  }

  /** A check with the estimate that holds something and counts how it is given back. */
  private final class Holding implements AdmissionCheck<Boolean> {
    @Override
    public Stage stage() {
      return Stage.ESTIMATE;
    }

    @Override
    public boolean applies(Request r) {
      return true;
    }

    @Override
    public boolean store() {
      return false;
    }

    @Override
    public CompletionStage<Boolean> ask(Request r) {
      return CompletableFuture.completedFuture(true);
    }

    @Override
    public Verdict answered(Boolean answer, Request r) {
      return new Held() {
        @Override
        protected void release(Release how) {
          releases.add(how);
        }
      };
    }
  }

  private Sessions sessions() {
    Intake intake = new Intake(policy, store, "t_", clock, ticker, 1000);
    return OneSlotPool.sessionsBuilder(controller, quotas, ticker, clock, timer, events::add)
        .check(CheckChain.TENANT_SLOT, snapshot -> new Holding())
        .planner(LateIntake.factory(intake))
        .planner(DispatchStart.factory(intake))
        .build();
  }

  private Subject subject(Duration deadline, long maxHold, Signals signals, boolean shadow) {
    return subject(RequestFormat.OPENAI_RESPONSES, deadline, maxHold, signals, shadow);
  }

  private Subject subject(
      RequestFormat format, Duration deadline, long maxHold, Signals signals, boolean shadow) {
    long now = ticker.nanos();
    return new Subject(
        "responses",
        OneSlotPool.POOL,
        OneSlotPool.INTERACTIVE,
        format,
        acme,
        now,
        now + deadline.toNanos(),
        null,
        maxHold,
        shadow,
        0,
        null,
        signals);
  }

  private AdmissionSession post(IntakeSessionTest.Front f, Subject s, String body) {
    AdmissionSession session = sessions().open(s, f, Runnable::run, SessionSteps.NONE);
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    session.begin(false, false, b.length, ticker.nanos());
    session.decideWithBody(b, 0, b.length, ticker.nanos());
    return session;
  }

  private AdmissionSession post(IntakeSessionTest.Front f, Duration deadline) {
    return post(f, subject(deadline, HOLD, Signals.NONE, false), LATE);
  }

  private static final String LATE = "{\"model\":\"m1\",\"input\":\"summarise the filings\"}";

  /** Takes the pool's one slot. */
  private AdmissionSession occupy() {
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    AdmissionSession s = post(f, Duration.ofSeconds(30));
    assertThat(f.calls).containsExactly("admitted(body)");
    releases.clear();
    return s;
  }

  private @Nullable IntakeNote lastNote() {
    SessionEvent e = events.get(events.size() - 1);
    if (e instanceof SessionEvent.Answered a) {
      return IntakeNote.of(a.facts());
    }
    return e instanceof SessionEvent.Refused r ? IntakeNote.of(r.facts()) : null;
  }

  @Test
  void deadlineUnreachable_answeredQueued_onlyAfterTheStoreAcknowledged() throws Exception {
    AdmissionSession running = occupy();
    store.hold();
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    AdmissionSession s = post(f, Duration.ofMillis(50)); // cannot wait for the slot in time
    assertThat(store.enqueues).isEqualTo(1);
    assertThat(f.calls).isEmpty(); // no answer before the store acknowledged the job
    assertThat(s.decided()).isFalse();
    assertThat(releases).isEmpty();

    store.gate.complete(null);
    assertThat(f.calls).containsExactly("answered");
    AdmissionCheck.Answered a = Objects.requireNonNull(f.answer);
    assertThat(a.reason()).isEqualTo(Reason.ACCEPTED);
    assertThat(a.status()).isEqualTo(200);
    String id = f.body().get("id").asText();
    assertThat(id).startsWith("resp_");
    assertThat(f.body().get("status").asText()).isEqualTo("queued");
    assertThat(f.body().get("model").asText()).isEqualTo("m1");
    assertThat(a.headers()).containsKeys("x-sluice-start-after", "x-sluice-start-before");
    assertThat(s.phase()).isEqualTo(AdmissionSession.Phase.REFUSED); // nothing runs now
    assertThat(releases).containsExactly(AdmissionCheck.Release.REFUSED); // given back once
    IntakeNote note = Objects.requireNonNull(lastNote());
    assertThat(note.event()).isEqualTo(IntakeNote.QUEUED);
    assertThat(note.jobId()).isEqualTo(id);
    assertThat(note.insteadOf()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    JobStore.JobView job =
        store.inner.read("t_", "acme", id, NOW, 60_000).toCompletableFuture().join();
    assertThat(Objects.requireNonNull(job).status()).isEqualTo(JobStatus.QUEUED);
    s.end(Outcome.CANCELLED); // the front end's end after the answer: nothing more given back
    assertThat(releases).hasSize(1);
    running.release(Outcome.COMPLETED);
  }

  @Test
  void storeFailure_keepsThePoolsRefusal_typed() {
    AdmissionSession running = occupy();
    store.hold();
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    post(f, Duration.ofMillis(50));
    store.gate.completeExceptionally(new IllegalStateException("redis: timeout"));
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(f.refusedStatus).isEqualTo(503);
    assertThat(f.answer).isNull();
    assertThat(releases).containsExactly(AdmissionCheck.Release.REFUSED);
    IntakeNote note = Objects.requireNonNull(lastNote());
    assertThat(note.event()).isEqualTo(IntakeNote.STORE_FAILED);
    assertThat(note.insteadOf()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(note.jobId()).isNull();
    running.release(Outcome.COMPLETED);
  }

  @Test
  void backlogFull_keepsThePoolsRefusal() {
    policy = oneJobPerTenant();
    AdmissionSession running = occupy();
    IntakeSessionTest.Front first = new IntakeSessionTest.Front();
    post(first, Duration.ofMillis(50));
    assertThat(first.calls).containsExactly("answered");
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    post(f, Duration.ofMillis(50));
    assertThat(f.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(Objects.requireNonNull(lastNote()).event()).isEqualTo(IntakeNote.BACKLOG_FULL);
    running.release(Outcome.COMPLETED);
  }

  @Test
  void queueTimeout_outOfTheQueue_acceptedAndItsPlaceGivenBackOnce() throws Exception {
    AdmissionSession running = occupy();
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    AdmissionSession s = post(f, Duration.ofSeconds(30));
    assertThat(f.calls).containsExactly("held"); // it waits for the slot
    assertThat(s.phase()).isEqualTo(AdmissionSession.Phase.QUEUED);
    store.hold();
    ticker.advance(Duration.ofSeconds(3)); // past the class's 2 s queue wait
    timer.fireAll();
    assertThat(store.enqueues).isEqualTo(1);
    assertThat(f.calls).containsExactly("held"); // still held while the store writes
    assertThat(releases).isEmpty();
    store.gate.complete(null);
    assertThat(f.calls).containsExactly("held", "answered");
    assertThat(Objects.requireNonNull(f.answer).reason()).isEqualTo(Reason.ACCEPTED);
    assertThat(Objects.requireNonNull(lastNote()).insteadOf()).isEqualTo(Reason.QUEUE_TIMEOUT);
    assertThat(releases).containsExactly(AdmissionCheck.Release.REFUSED);
    s.end(Outcome.CANCELLED);
    assertThat(releases).hasSize(1);
    // its place in the queue is gone: the slot, once free, goes to the next request at once
    running.release(Outcome.COMPLETED);
    IntakeSessionTest.Front next = new IntakeSessionTest.Front();
    AdmissionSession n = post(next, Duration.ofSeconds(30));
    assertThat(next.calls).containsExactly("admitted(body)");
    n.release(Outcome.COMPLETED);
  }

  @Test
  void frontEndGoneWhileTheStoreWrites_holdsGivenBackOnce_jobCancelled() throws Exception {
    AdmissionSession running = occupy();
    store.hold();
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    AdmissionSession s = post(f, Duration.ofMillis(50));
    s.end(Outcome.CANCELLED);
    assertThat(releases).containsExactly(AdmissionCheck.Release.CANCELLED);
    store.gate.complete(null); // the job was written, but nobody holds its id
    assertThat(f.calls).isEmpty();
    assertThat(releases).hasSize(1);
    assertThat(store.inner.backlog("t_", "gpu", NOW, 60_000).toCompletableFuture().join().waiting())
        .isZero(); // cancelled: it never runs
    running.release(Outcome.COMPLETED);
  }

  @Test
  void otherRefusals_otherClasses_dispatchedJobs_andShadow_areNeverTakenIn() {
    AdmissionSession running = occupy();
    // a dispatched job (its marker): refused as it was, given back to the store by its dispatcher
    IntakeSessionTest.Front marked = new IntakeSessionTest.Front();
    Signals signals =
        Signals.of(new String[] {DispatchCheck.SIGNAL}, new @Nullable String[] {"resp_x.1.ab"});
    post(marked, subject(Duration.ofMillis(50), HOLD, signals, false), LATE);
    assertThat(marked.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(store.enqueues).isZero();
    // a body that is no JSON object cannot run later: the refusal stands, noted
    IntakeSessionTest.Front notJson = new IntakeSessionTest.Front();
    post(notJson, subject(Duration.ofMillis(50), HOLD, Signals.NONE, false), "[1,2]");
    assertThat(notJson.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(Objects.requireNonNull(lastNote()).event()).isEqualTo(IntakeNote.NOT_JSON);
    // another class (whenLate not set): refused as before, nothing noted
    policy =
        IntakePolicy.builder().classes(Set.of()).whenLate(Map.of("batch", WhenLate.ACCEPT)).build();
    IntakeSessionTest.Front other = new IntakeSessionTest.Front();
    post(other, Duration.ofMillis(50));
    assertThat(other.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(lastNote()).isNull();
    assertThat(store.enqueues).isZero();
    running.release(Outcome.COMPLETED);
  }

  @Test
  void frontEndGone_jobCancelledOnce_itsPlaceBackOnce_countedAndRecordedAsAbandoned() {
    policy = oneJobPerTenant();
    AdmissionSession running = occupy();
    store.hold();
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    post(f, Duration.ofMillis(50)).end(Outcome.CANCELLED); // the client leaves while it is written
    events.clear();
    store.gate.complete(null);

    assertThat(f.calls).isEmpty(); // nobody to answer
    assertThat(store.cancels).as("cancelled once").isEqualTo(1);
    List<SessionEvent.Refused> refused =
        events.stream()
            .filter(SessionEvent.Refused.class::isInstance)
            .map(SessionEvent.Refused.class::cast)
            .toList();
    assertThat(refused).as("told once, as the pool's refusal").hasSize(1);
    assertThat(refused.get(0).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    IntakeNote note = Objects.requireNonNull(IntakeNote.of(refused.get(0).facts()));
    assertThat(note.event()).isEqualTo(IntakeNote.ABANDONED);
    assertThat(note.insteadOf()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(note.status()).isEqualTo("cancelled");
    String abandoned = Objects.requireNonNull(note.jobId());
    assertThat(releases).containsExactly(AdmissionCheck.Release.CANCELLED); // given back once

    // its place in the tenant's backlog (cap: 1 job) went back: the next late request is taken in
    IntakeSessionTest.Front next = new IntakeSessionTest.Front();
    post(next, Duration.ofMillis(50));
    assertThat(next.calls).containsExactly("answered");
    // a second cancel of the abandoned job frees nothing more: the new job still fills the cap
    store.inner.cancel("t_", "acme", abandoned, NOW, 60_000).toCompletableFuture().join();
    IntakeSessionTest.Front full = new IntakeSessionTest.Front();
    post(full, Duration.ofMillis(50));
    assertThat(full.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(Objects.requireNonNull(lastNote()).event()).isEqualTo(IntakeNote.BACKLOG_FULL);
    running.release(Outcome.COMPLETED);
  }

  @Test
  void aClientOfAnotherShape_isNeverTakenIn() {
    AdmissionSession running = occupy();
    Subject chat =
        subject(RequestFormat.OPENAI_CHAT, Duration.ofMillis(50), HOLD, Signals.NONE, false);
    IntakeSessionTest.Front f = new IntakeSessionTest.Front();
    post(f, chat, "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertThat(f.refusedWith).isEqualTo(Reason.DEADLINE_UNREACHABLE); // it cannot poll an id
    assertThat(store.enqueues).isZero();
    running.release(Outcome.COMPLETED);
  }

  @Test
  void aRequestTheFrontEndCannotHold_refusedPoolSaturated_isTakenIn() throws Exception {
    // behind a front end that cannot hold (Envoy Gateway: no max_message_timeout), a full pool
    // refuses pool_saturated at once: that is "cannot start in time" too
    AdmissionSession running = occupy();
    IntakeSessionTest.Front noHold = new IntakeSessionTest.Front();
    post(noHold, subject(Duration.ofSeconds(30), 0, Signals.NONE, false), LATE);
    assertThat(noHold.calls).containsExactly("answered");
    assertThat(noHold.body().get("status").asText()).isEqualTo("queued");
    assertThat(store.enqueues).isEqualTo(1);
    IntakeNote note = Objects.requireNonNull(lastNote());
    assertThat(note.event()).isEqualTo(IntakeNote.QUEUED);
    assertThat(note.insteadOf()).isEqualTo(Reason.POOL_SATURATED);
    assertThat(releases).containsExactly(AdmissionCheck.Release.REFUSED); // given back once
    running.release(Outcome.COMPLETED);
  }

  @Test
  void aDispatchedJobsRequest_startsItsJob_onlyWhenAdmitted() {
    // a claimed job reads queued while its dispatched request waits; admitted, in_progress
    JobStore.NewJob job =
        new JobStore.NewJob(
            "resp_0123456789abcdef0123456789abcdef",
            "acme",
            OneSlotPool.POOL.name(),
            OneSlotPool.INTERACTIVE.name(),
            "responses",
            "m1",
            10,
            NOW,
            NOW + 3_600_000,
            LATE.getBytes(StandardCharsets.UTF_8));
    store
        .inner
        .enqueue("t_", job, new JobStore.Caps(10, 1_000_000, 60_000))
        .toCompletableFuture()
        .join();
    store
        .inner
        .claim("t_", OneSlotPool.POOL.name(), "replica-a", NOW, 60_000, 60_000)
        .toCompletableFuture()
        .join();
    Signals marked =
        Signals.of(
            new String[] {DispatchCheck.SIGNAL}, new @Nullable String[] {job.id() + ".1.ab"});
    AdmissionSession running = occupy();
    IntakeSessionTest.Front waits = new IntakeSessionTest.Front();
    AdmissionSession queued =
        post(waits, subject(Duration.ofSeconds(30), HOLD, marked, false), LATE);
    assertThat(waits.calls).containsExactly("held"); // in Sluice's queue: not started
    assertThat(status(job.id())).isEqualTo(JobStatus.QUEUED);
    running.release(Outcome.COMPLETED); // its turn: admitted out of the queue
    assertThat(waits.calls).containsExactly("held", "admitted(body)");
    assertThat(status(job.id())).isEqualTo(JobStatus.IN_PROGRESS);
    queued.release(Outcome.COMPLETED);
  }

  private JobStatus status(String id) {
    JobStore.JobView v =
        store.inner.read("t_", "acme", id, NOW, 60_000).toCompletableFuture().join();
    return Objects.requireNonNull(v).status();
  }

  /** Late intake of the test's class, with a backlog of one job per tenant. */
  private static IntakePolicy oneJobPerTenant() {
    return IntakePolicy.builder()
        .classes(Set.of())
        .maxJobsPerTenant(1)
        .whenLate(Map.of(OneSlotPool.INTERACTIVE.name(), WhenLate.ACCEPT))
        .build();
  }
}
