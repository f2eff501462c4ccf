package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Sessions;
import io.sluice.core.session.Subject;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link SessionRecorder} turns a session's events into the metrics of docs/metrics.md and the
 * decision record: real sessions (fake ticker, fixed clock, in-memory quota store, a manual timer)
 * are driven through admit / release, a tenant refusal and a queue timeout, and the registry and
 * the records written are read back.
 */
class SessionRecorderTest {
  private static final long T0 = 1_800_000_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<String> lines = new ArrayList<>();
  private final SessionRecorder recorder =
      new SessionRecorder(
          new AdmissionMetrics(registry, ticker::nanos),
          new DecisionLog(DecisionLogSettings.every(), lines::add, null),
          List.of());
  private final List<Runnable> timerTasks = new ArrayList<>();

  private final PoolPolicy pool = io.sluice.core.session.OneSlotPool.POOL;
  private final ClassPolicy interactive = io.sluice.core.session.OneSlotPool.INTERACTIVE;
  private final AdmissionController controller = io.sluice.core.session.OneSlotPool.controller();
  private final Sessions sessions =
      io.sluice.core.session.OneSlotPool.sessions(
          controller,
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
          recorder);

  private static Tenant tenant(long rpm, long itpm, long otpm) {
    return new Tenant("acme", new TierPolicy("pro", 1, 0, rpm, itpm, otpm));
  }

  /** A request without a body, as the ext_proc front end starts one (decided at its headers). */
  private AdmissionSession start(RecordingFront front, Tenant tenant) {
    long now = ticker.nanos();
    Subject s =
        io.sluice.core.session.OneSlotPool.chat(
            tenant, now, "op-1", Duration.ofSeconds(5).toNanos());
    AdmissionSession session = sessions.open(s, front, Runnable::run, SessionSteps.NONE);
    session.begin(true, true, 0, now);
    return session;
  }

  private double counter(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  /** {@code sluice_decisions_total} of the gpu pool's interactive class, tier pro. */
  private double decisions(String decision, String reason) {
    return counter(
        MetricNames.DECISIONS,
        "pool",
        "gpu",
        "class",
        "interactive",
        "tier",
        "pro",
        "decision",
        decision,
        "reason",
        reason);
  }

  private List<AdmissionRecord> records() throws Exception {
    List<AdmissionRecord> out = new ArrayList<>();
    for (String line : lines) {
      AdmissionRecord.Builder b = AdmissionRecord.newBuilder();
      JsonFormat.parser().merge(line, b);
      out.add(b.build());
    }
    return out;
  }

  @Test
  void admittedAndReleased_countsTheDecisionTokensUpstreamAndRelease_thenOneAdmitRecord()
      throws Exception {
    RecordingFront f = new RecordingFront(false);
    AdmissionSession s = start(f, tenant(0, 10_000, 10_000));
    assertThat(f.calls).containsExactly("admitted");
    assertThat(lines).as("an admitted request is recorded when its permit goes back").isEmpty();

    s.running().headers(200, "application/json", true);
    byte[] body =
        "{\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":40}}"
            .getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, true);
    ticker.advance(Duration.ofMillis(250));
    assertThat(s.release(Outcome.COMPLETED)).isTrue();

    String[] cls = {"pool", "gpu", "class", "interactive"};
    assertThat(decisions("admit", "admitted")).isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.DECISION_LATENCY)
                .tags("phase", "headers", "decision", "admit")
                .timer()
                .count())
        .isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.TOKENS_ESTIMATED)
                .tags(cls)
                .tag("direction", "output")
                .summary()
                .totalAmount())
        .isEqualTo(100); // no body: the class's default output reserve
    assertThat(counter(MetricNames.UPSTREAM_RESPONSES, "pool", "gpu", "status", "2xx"))
        .isEqualTo(1);
    assertThat(
            counter(
                MetricNames.PERMITS_RELEASED,
                "pool",
                "gpu",
                "class",
                "interactive",
                "outcome",
                "completed"))
        .isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.PERMIT_HOLD)
                .tags(cls)
                .timer()
                .totalTime(TimeUnit.MILLISECONDS))
        .isEqualTo(250); // the fake ticker's 250 ms
    assertThat(
            registry
                .get(MetricNames.TOKENS_ACTUAL)
                .tags(cls)
                .tag("direction", "output")
                .summary()
                .totalAmount())
        .isEqualTo(40);
    assertThat(counter(MetricNames.QUOTA_RECONCILED, "direction", "refunded"))
        .isEqualTo(60); // 100 reserved, 40 used

    assertThat(records()).hasSize(1);
    AdmissionRecord r = records().get(0);
    assertThat(r.getDecision()).isEqualTo(io.sluice.api.v1.Decision.DECISION_ADMIT);
    assertThat(r.getReason()).isEmpty();
    assertThat(r.getHttpStatus()).isEqualTo(200);
    assertThat(r.getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_COMPLETED);
    assertThat(r.getUpstreamStatus()).isEqualTo(200);
    assertThat(r.getHeldMs()).isEqualTo(250);
    assertThat(r.getActual().getOutputTokens()).isEqualTo(40);
    assertThat(r.getActual().getReported()).isTrue();
    assertThat(r.getArrivalTime().getSeconds()).isEqualTo(T0 / 1000);
    assertThat(r.getTenant()).isEqualTo("acme");
    assertThat(r.getTier()).isEqualTo("pro");
    assertThat(r.getPool()).isEqualTo("gpu");
    assertThat(r.getClassName()).isEqualTo("interactive");
    assertThat(r.getRoute()).isEqualTo("chat");
    assertThat(r.getOperationId()).isEqualTo("op-1");
    assertThat(r.getDeadlineMs()).isEqualTo(30_000);
    assertThat(r.getMaxQueueAgeMs()).isEqualTo(2_000);
    assertThat(r.getEstimate().getOutputReserveTokens()).isEqualTo(100);
    assertThat(r.getEstimate().getWorkUnits()).isEqualTo(s.workUnits());
  }

  @Test
  void tenantRefusal_countsTheRejectAndRetryAfter_thenOneRejectRecord() throws Exception {
    Tenant t = tenant(1, 0, 0); // one request per minute
    start(new RecordingFront(false), t).release(Outcome.COMPLETED);
    lines.clear();
    RecordingFront f = new RecordingFront(false);
    start(f, t);
    assertThat(f.calls).containsExactly("refused tenant_rate");

    assertThat(decisions("reject", "tenant_rate")).isEqualTo(1);
    assertThat(registry.get(MetricNames.RETRY_AFTER).tag("reason", "tenant_rate").summary().count())
        .isEqualTo(1);
    assertThat(records()).hasSize(1);
    AdmissionRecord r = records().get(0);
    assertThat(r.getDecision()).isEqualTo(io.sluice.api.v1.Decision.DECISION_REJECT);
    assertThat(r.getReason()).isEqualTo("tenant_rate");
    assertThat(r.getHttpStatus()).isEqualTo(429);
    assertThat(r.getRetryAfterSeconds()).isBetween(1L, 60L);
    assertThat(r.getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_REJECTED);
    assertThat(r.hasActual()).isFalse();
    assertThat(r.getMessage()).as("the message the client got").isNotEmpty().isEqualTo(f.message);
  }

  @Test
  void queuedThenExpired_countsQueueOverrideAndWait_thenARejectRecordWithItsPlace()
      throws Exception {
    AdmissionSession first =
        start(new RecordingFront(false), tenant(0, 0, 0)); // holds the only slot
    RecordingFront f = new RecordingFront(false);
    start(f, tenant(0, 0, 0));
    assertThat(f.calls).containsExactly("held");
    ticker.advance(Duration.ofMillis(2_100)); // past the class's maxQueueWait
    new ArrayList<>(timerTasks).forEach(Runnable::run);
    assertThat(f.calls).containsExactly("held", "refused queue_timeout");

    assertThat(decisions("queue", "queued")).isEqualTo(1);
    assertThat(counter(MetricNames.OVERRIDES_SENT, "pool", "gpu")).isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.QUEUE_WAIT_PREDICTED)
                .tags("pool", "gpu", "class", "interactive")
                .timer()
                .count())
        .isEqualTo(1);
    assertThat(
            registry
                .get(MetricNames.QUEUE_WAIT)
                .tags("pool", "gpu", "class", "interactive", "outcome", "expired")
                .timer()
                .totalTime(TimeUnit.MILLISECONDS))
        .isEqualTo(2_100);
    assertThat(decisions("reject", "queue_timeout")).isEqualTo(1);

    List<AdmissionRecord> rs = records();
    assertThat(rs).hasSize(1); // the first request is still running
    AdmissionRecord r = rs.get(0);
    assertThat(r.getReason()).isEqualTo("queue_timeout");
    assertThat(r.getHttpStatus()).isEqualTo(503);
    assertThat(r.getQueuePosition()).isEqualTo(1);
    assertThat(r.getQueueWaitMs()).isEqualTo(2_100);
    assertThat(r.getMessage()).isNotEmpty().isEqualTo(f.message);
    first.release(Outcome.CANCELLED);
    assertThat(records()).hasSize(2);
    assertThat(records().get(1).getOutcome()).isEqualTo(io.sluice.api.v1.Outcome.OUTCOME_CANCELLED);
  }

  @Test
  void eventsWithoutASession_becomeTheirCounters() {
    recorder.on(SessionEvent.QuotaStoreFailed.OPEN);
    recorder.on(SessionEvent.QuotaStoreFailed.CLOSED);
    recorder.on(SessionEvent.QuotaStoreFailed.CLOSED);
    recorder.on(new SessionEvent.TenantSlot("gpu", SessionEvent.TenantSlot.DENIED));
    recorder.on(new SessionEvent.EstimateFellBack("no_content_length"));
    recorder.on(new SessionEvent.Reconciled(0, 7));

    assertThat(counter(MetricNames.QUOTA_STORE_FAILURES, "mode", "open")).isEqualTo(1);
    assertThat(counter(MetricNames.QUOTA_STORE_FAILURES, "mode", "closed")).isEqualTo(2);
    assertThat(counter(MetricNames.TENANT_SLOTS, "pool", "gpu", "result", "denied")).isEqualTo(1);
    assertThat(counter(MetricNames.ESTIMATE_FALLBACKS, "cause", "no_content_length")).isEqualTo(1);
    assertThat(counter(MetricNames.QUOTA_RECONCILED, "direction", "overcharged")).isEqualTo(7);
    assertThat(registry.find(MetricNames.QUOTA_RECONCILED).tag("direction", "refunded").counter())
        .isNull();
    assertThat(lines).isEmpty();
  }

  @Test
  void decisionLogOff_keepsTheMetrics_writesNoRecord() {
    SessionRecorder quiet =
        new SessionRecorder(
            new AdmissionMetrics(registry, ticker::nanos),
            new DecisionLog(DecisionLogSettings.of(false, 1.0, true, 0, 0), lines::add, null),
            List.of());
    Sessions off =
        Sessions.builder(
                controller,
                new TenantQuotas(
                    new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
                    "test_",
                    TenantQuotas.FailureMode.OPEN),
                sessions.estimator(),
                ticker,
                clock,
                sessions.timer(),
                quiet)
            .defaultInputTokens(500)
            .build();
    long now = ticker.nanos();
    AdmissionSession s =
        off.open(
            new Subject(
                "chat",
                pool,
                interactive,
                RequestFormat.OPENAI_CHAT,
                tenant(0, 0, 0),
                now,
                now + 1_000_000_000L,
                null,
                0,
                false,
                0,
                null,
                io.sluice.core.session.Signals.NONE),
            new RecordingFront(false),
            Runnable::run,
            SessionSteps.NONE);
    s.begin(true, true, 0, now);
    s.release(Outcome.COMPLETED);

    assertThat(
            counter(
                MetricNames.PERMITS_RELEASED,
                "pool",
                "gpu",
                "class",
                "interactive",
                "outcome",
                "completed"))
        .isEqualTo(1);
    assertThat(lines).isEmpty();
  }

  /**
   * The learned output reserve's rule and the old rule's reserve reach the decision record and
   * {@code sluice_reserve_decisions_total}: warm-up (the cap), then the learned value.
   */
  @Test
  void learnedReserve_ruleAndRequestedOutputInTheRecordAndTheCounter() throws Exception {
    io.sluice.core.estimate.OutputReserves learner =
        new io.sluice.core.estimate.OutputReserves(
            io.sluice.core.estimate.OutputReserves.Settings.builder()
                .warmup(5)
                .maxKeys(10)
                .build());
    Sessions learning =
        io.sluice.core.session.OneSlotPool.sessionsBuilder(
                controller,
                new TenantQuotas(
                    new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
                    "test_",
                    TenantQuotas.FailureMode.OPEN),
                ticker,
                clock,
                (delayNanos, task) -> () -> {},
                io.sluice.core.session.SessionListener.of(
                    new io.sluice.core.session.ReserveLearner(learner), recorder))
            .reserves(learner)
            .build();
    byte[] body =
        "{\"model\":\"m\",\"max_tokens\":1000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] usage =
        "{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":40}}"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    for (int i = 0; i < 6; i++) {
      Subject sub =
          io.sluice.core.session.OneSlotPool.chat(
              tenant(0, 0, 0), ticker.nanos(), "op", Duration.ofSeconds(5).toNanos());
      AdmissionSession s =
          learning.open(sub, new RecordingFront(false), Runnable::run, SessionSteps.NONE);
      s.begin(false, false, -1, ticker.nanos());
      s.decideWithBody(body, 0, body.length, ticker.nanos());
      s.running().headers(200, "application/json", true);
      s.running().body(usage, 0, usage.length, true);
      s.release(Outcome.COMPLETED);
    }

    List<AdmissionRecord> rs = records();
    assertThat(rs).hasSize(6);
    // five answers under the prior (the class default, 100, below the cap), then the key's own
    assertThat(rs.get(0).getEstimate().getReserveRule()).isEqualTo("prior");
    assertThat(rs.get(0).getEstimate().getOutputReserveTokens()).isEqualTo(100);
    assertThat(rs.get(0).getEstimate().getRequestedOutputTokens()).isEqualTo(1000);
    assertThat(rs.get(5).getEstimate().getReserveRule()).isEqualTo("bound");
    assertThat(rs.get(5).getEstimate().getOutputReserveTokens()).isBetween(40L, 50L);
    assertThat(rs.get(5).getEstimate().getRequestedOutputTokens()).isEqualTo(1000);
    assertThat(counter(MetricNames.RESERVE_DECISIONS, "pool", "gpu", "rule", "prior")).isEqualTo(5);
    assertThat(counter(MetricNames.RESERVE_DECISIONS, "pool", "gpu", "rule", "bound")).isEqualTo(1);
  }
}
