package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.intake.Intake;
import io.sluice.core.intake.IntakeCheck;
import io.sluice.core.intake.IntakeNote;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.OperationCheck;
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
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Background intake through a session ({@link IntakeCheck} with the estimate, {@link
 * OperationCheck} at the headers) on {@link OneSlotPool}: a background request is answered from the
 * store's acknowledgement with the queued object and never takes the pool's slot; the store
 * failing, the tenant's caps full and a body too large are typed refusals; the operation routes
 * answer status and cancel to the creating tenant only, 404 to another, 400 to a malformed id.
 */
class IntakeSessionTest {
  private static final ObjectMapper JSON = new ObjectMapper();
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
  private final Tenant beta = new Tenant("beta", TierPolicy.defaults("pro"));
  private JobStore store = new InMemoryJobStore(1000);
  private IntakePolicy policy =
      IntakePolicy.builder().classes(Set.of(OneSlotPool.INTERACTIVE.name())).build();

  /** Records the check's answer beside the other calls. */
  static final class Front implements SessionFront {
    final List<String> calls = new ArrayList<>();
    @Nullable Reason refusedWith;
    int refusedStatus;
    AdmissionCheck.@Nullable Answered answer;

    @Override
    public void admitted(boolean atBody) {
      calls.add(atBody ? "admitted(body)" : "admitted(headers)");
    }

    @Override
    public void bodyWanted() {}

    @Override
    public void held(long holdMillis) {
      calls.add("held");
    }

    @Override
    public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
      calls.add("refused");
      refusedWith = reason;
      refusedStatus = status;
    }

    @Override
    public void storeFailed(Throwable cause) {
      calls.add("storeFailed");
    }

    @Override
    public void answered(AdmissionCheck.Answered a) {
      calls.add("answered");
      answer = a;
    }

    JsonNode body() throws Exception {
      AdmissionCheck.Answered a = java.util.Objects.requireNonNull(answer);
      return JSON.readTree(a.body());
    }
  }

  private Sessions sessions() {
    Intake intake = new Intake(policy, store, "t_", clock, ticker, 1000);
    return OneSlotPool.sessionsBuilder(controller, quotas, ticker, clock, timer, events::add)
        .check(OperationCheck.ORDER, OperationCheck.factory(intake))
        .check(IntakeCheck.ORDER, IntakeCheck.factory(intake))
        .build();
  }

  private Subject subject(Tenant t, @Nullable String path, @Nullable String method) {
    long now = ticker.nanos();
    return new Subject(
        "responses",
        OneSlotPool.POOL,
        OneSlotPool.INTERACTIVE,
        RequestFormat.OPENAI_RESPONSES,
        t,
        now,
        now + Duration.ofSeconds(30).toNanos(),
        null,
        HOLD,
        false,
        0,
        null,
        Signals.of(
            new String[] {OperationCheck.PATH, OperationCheck.METHOD},
            new @Nullable String[] {path, method}));
  }

  /** A POST of {@code body} to /v1/responses, decided with its body. */
  private AdmissionSession post(Front f, Tenant t, String body) {
    AdmissionSession s =
        sessions().open(subject(t, "/v1/responses", "POST"), f, Runnable::run, SessionSteps.NONE);
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    s.begin(false, false, b.length, ticker.nanos());
    s.decideWithBody(b, 0, b.length, ticker.nanos());
    return s;
  }

  private AdmissionSession get(Front f, Tenant t, String path, String method) {
    AdmissionSession s =
        sessions().open(subject(t, path, method), f, Runnable::run, SessionSteps.NONE);
    s.begin(true, true, 0, ticker.nanos());
    return s;
  }

  private static final String BACKGROUND =
      "{\"model\":\"m1\",\"input\":\"summarise the attached report\",\"background\":true}";

  @Test
  void backgroundRequest_answeredQueued_fromTheStore_withoutThePoolsSlot() throws Exception {
    Front f = new Front();
    AdmissionSession s = post(f, acme, BACKGROUND);
    assertThat(f.calls).containsExactly("answered");
    assertThat(s.phase()).isEqualTo(AdmissionSession.Phase.REFUSED); // nothing runs
    assertThat(s.decided()).isTrue();
    AdmissionCheck.Answered a = java.util.Objects.requireNonNull(f.answer);
    assertThat(a.reason()).isEqualTo(Reason.ACCEPTED);
    assertThat(a.status()).isEqualTo(200);
    JsonNode body = f.body();
    String id = body.get("id").asText();
    assertThat(id).startsWith("resp_").hasSize(37);
    assertThat(body.get("object").asText()).isEqualTo("response");
    assertThat(body.get("status").asText()).isEqualTo("queued");
    assertThat(body.get("created_at").asLong()).isEqualTo(NOW / 1000);
    assertThat(body.get("model").asText()).isEqualTo("m1");
    assertThat(body.get("sluice").get("position").asLong()).isZero();
    assertThat(body.get("sluice").get("expires_at").asLong()).isEqualTo(NOW / 1000 + 3600);
    assertThat(a.headers()).containsEntry("x-sluice-position", "0");
    assertThat(a.headers()).containsKeys("x-sluice-start-after", "x-sluice-start-before");
    // the answer's note reaches the listeners and the record
    SessionEvent.Answered e = (SessionEvent.Answered) events.get(events.size() - 1);
    IntakeNote note = IntakeNote.of(e.facts());
    assertThat(note).isNotNull();
    assertThat(note.event()).isEqualTo(IntakeNote.QUEUED);
    assertThat(note.jobId()).isEqualTo(id);
    // the pool's one slot is still free: an interactive request runs at once
    Front g = new Front();
    AdmissionSession run = post(g, acme, "{\"model\":\"m1\",\"input\":\"hi\"}");
    assertThat(g.calls).containsExactly("admitted(body)");
    run.release(Outcome.COMPLETED);
    s.end(Outcome.CANCELLED); // the front end's end after an answer: nothing to give back
  }

  @Test
  void frontEndGoneWhileTheStoreWrites_jobCancelledOnce_itsPlaceBackOnce_countedAbandoned()
      throws Exception {
    policy =
        IntakePolicy.builder()
            .classes(Set.of(OneSlotPool.INTERACTIVE.name()))
            .maxJobsPerTenant(1)
            .build();
    LateIntakeSessionTest.Gated gated = new LateIntakeSessionTest.Gated();
    store = gated;
    gated.hold();
    Front f = new Front();
    post(f, acme, BACKGROUND).end(Outcome.CANCELLED); // the client leaves while it is written
    events.clear();
    gated.gate.complete(null);

    assertThat(f.calls).isEmpty(); // nobody to answer
    assertThat(gated.cancels).as("cancelled once").isEqualTo(1);
    List<SessionEvent.Answered> told =
        events.stream()
            .filter(SessionEvent.Answered.class::isInstance)
            .map(SessionEvent.Answered.class::cast)
            .toList();
    assertThat(told).as("told once").hasSize(1);
    assertThat(told.get(0).reason()).isEqualTo(Reason.ACCEPTED);
    IntakeNote note = java.util.Objects.requireNonNull(IntakeNote.of(told.get(0).facts()));
    assertThat(note.event()).isEqualTo(IntakeNote.ABANDONED);
    assertThat(note.status()).isEqualTo("cancelled");
    assertThat(note.insteadOf()).isNull();
    String abandoned = java.util.Objects.requireNonNull(note.jobId());
    JobStore.JobView v =
        gated.inner.read("t_", "acme", abandoned, NOW, 60_000).toCompletableFuture().join();
    assertThat(java.util.Objects.requireNonNull(v).status()).isEqualTo(JobStatus.CANCELLED);

    // its place in the tenant's backlog (cap: 1 job) went back: the next one is accepted
    Front next = new Front();
    post(next, acme, BACKGROUND);
    assertThat(next.calls).containsExactly("answered");
    // a second cancel of the abandoned job frees nothing more: the cap is full again
    gated.inner.cancel("t_", "acme", abandoned, NOW, 60_000).toCompletableFuture().join();
    Front full = new Front();
    post(full, acme, BACKGROUND);
    assertThat(full.refusedWith).isEqualTo(Reason.INTAKE_BACKLOG_FULL);
    assertThat(gated.cancels).isEqualTo(1);
  }

  @Test
  void notBackground_orAnotherClass_goesToThePool() {
    Front f = new Front();
    AdmissionSession s = post(f, acme, "{\"model\":\"m1\",\"background\":false,\"input\":\"x\"}");
    assertThat(f.calls).containsExactly("admitted(body)");
    s.release(Outcome.COMPLETED);
    policy = IntakePolicy.builder().classes(Set.of("batch")).build();
    Front g = new Front();
    AdmissionSession t = post(g, acme, BACKGROUND);
    assertThat(g.calls).containsExactly("admitted(body)");
    t.release(Outcome.COMPLETED);
  }

  @Test
  void storeFailure_isATypedRefusal_neverAnId() {
    store = new Failing();
    Front f = new Front();
    post(f, acme, BACKGROUND);
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isEqualTo(Reason.INTAKE_UNAVAILABLE);
    assertThat(f.refusedStatus).isEqualTo(503);
    assertThat(f.answer).isNull();
  }

  @Test
  void tenantBacklogFull_andBodyTooLarge_areTypedRefusals() {
    policy = caps(1, 1 << 20);
    Front f = new Front();
    post(f, acme, BACKGROUND);
    assertThat(f.calls).containsExactly("answered");
    Front g = new Front();
    post(g, acme, BACKGROUND);
    assertThat(g.refusedWith).isEqualTo(Reason.INTAKE_BACKLOG_FULL);
    assertThat(g.refusedStatus).isEqualTo(429);
    Front other = new Front(); // another tenant has its own backlog
    post(other, beta, BACKGROUND);
    assertThat(other.calls).containsExactly("answered");

    policy = caps(100, 16);
    Front big = new Front();
    post(big, beta, BACKGROUND);
    assertThat(big.refusedWith).isEqualTo(Reason.BODY_TOO_LARGE);
    assertThat(big.refusedStatus).isEqualTo(413);
  }

  @Test
  void operationRoutes_answerTheCreatingTenantOnly() throws Exception {
    Front f = new Front();
    post(f, acme, BACKGROUND);
    String id = f.body().get("id").asText();

    Front read = new Front();
    AdmissionSession r = get(read, acme, "/v1/responses/" + id + "?stream=false", "GET");
    assertThat(read.calls).containsExactly("answered");
    assertThat(read.answer.reason()).isEqualTo(Reason.OPERATION_STATUS);
    assertThat(read.body().get("status").asText()).isEqualTo("queued");
    assertThat(read.body().get("id").asText()).isEqualTo(id);
    assertThat(r.phase()).isEqualTo(AdmissionSession.Phase.REFUSED);

    Front other = new Front();
    get(other, beta, "/v1/responses/" + id, "GET");
    assertThat(other.refusedWith).isEqualTo(Reason.UNKNOWN_OPERATION);
    assertThat(other.refusedStatus).isEqualTo(404);
    Front otherCancel = new Front();
    get(otherCancel, beta, "/v1/responses/" + id + "/cancel", "POST");
    assertThat(otherCancel.refusedStatus).isEqualTo(404);

    Front malformed = new Front();
    get(malformed, acme, "/v1/responses/resp_../../etc", "GET");
    assertThat(malformed.calls).containsExactly("admitted(headers)"); // not an operation route
    Front bad = new Front();
    get(bad, acme, "/v1/responses/resp_XYZ", "GET");
    assertThat(bad.refusedWith).isEqualTo(Reason.INVALID_REQUEST);
    assertThat(bad.refusedStatus).isEqualTo(400);
    Front unknown = new Front();
    get(unknown, acme, "/v1/responses/resp_" + "0".repeat(32), "GET");
    assertThat(unknown.refusedStatus).isEqualTo(404);

    Front cancel = new Front();
    get(cancel, acme, "/v1/responses/" + id + "/cancel", "POST");
    assertThat(cancel.answer.reason()).isEqualTo(Reason.OPERATION_STATUS);
    assertThat(cancel.body().get("status").asText()).isEqualTo("cancelled");
    Front after = new Front();
    get(after, acme, "/v1/responses/" + id, "GET");
    assertThat(after.body().get("status").asText()).isEqualTo("cancelled");
  }

  @Test
  void pastItsFreshness_theJobReadsExpired() throws Exception {
    policy =
        IntakePolicy.builder()
            .classes(Set.of(OneSlotPool.INTERACTIVE.name()))
            .freshness(Duration.ofSeconds(10))
            .build();
    InMemoryJobStore memory = new InMemoryJobStore(100);
    store = memory;
    Front f = new Front();
    post(f, acme, BACKGROUND);
    String id = f.body().get("id").asText();
    JobStore.JobView later =
        memory.read("t_", "acme", id, NOW + 11_000, 60_000).toCompletableFuture().join();
    assertThat(later.status().code()).isEqualTo("expired");
  }

  private static IntakePolicy caps(int maxJobsPerTenant, int maxRequestBytes) {
    return IntakePolicy.builder()
        .classes(Set.of(OneSlotPool.INTERACTIVE.name()))
        .maxJobsPerTenant(maxJobsPerTenant)
        .maxRequestBytes(maxRequestBytes)
        .build();
  }

  /** A store that never acknowledges. */
  static final class Failing implements JobStore {
    @Override
    public CompletionStage<Enqueued> enqueue(String prefix, NewJob job, Caps caps) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<@Nullable JobView> read(
        String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<@Nullable JobView> cancel(
        String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<@Nullable Claimed> claim(
        String prefix, String pool, String consumer, long now, long lease, long retention) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<Boolean> start(String prefix, String id) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<Boolean> release(
        String prefix, String id, int attempt, long now, long retention) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<Backlog> backlog(String prefix, String pool, long now, long retention) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }

    @Override
    public CompletionStage<Boolean> complete(
        String prefix,
        String id,
        io.sluice.core.intake.JobStatus status,
        byte @Nullable [] result,
        @Nullable String error,
        long now,
        long retention) {
      return CompletableFuture.failedFuture(new IllegalStateException("redis: timeout"));
    }
  }
}
