package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.session.AdmissionSession;
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
import org.junit.jupiter.api.Test;

/**
 * The decision record's {@code estimate.fanout_work_units} and {@code workflow_id}, the fan-out
 * metric by source, the workflows gauge, and a {@code fanout_budget} refusal in the refusal
 * counters, through real sessions and {@link SessionRecorder}.
 */
class FanOutRecordTest {
  private static final long T0 = 1_800_000_000_000L;
  private static final PoolPolicy POOL =
      io.sluice.core.session.OneSlotPool.fanOutPool(new FanOutPolicy(10, 100, 1000, 5000));
  private static final ClassPolicy INTERACTIVE = io.sluice.core.session.OneSlotPool.INTERACTIVE;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<String> lines = new ArrayList<>();
  private final AdmissionMetrics metrics = new AdmissionMetrics(registry, ticker::nanos);
  private final AdmissionController controller =
      new AdmissionController(
          List.of(POOL),
          List.of(INTERACTIVE),
          Duration.ofSeconds(10),
          PoolState.ReleaseListener.NONE,
          Math::random);
  private final WorkflowBudget budget = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
  private final Sessions sessions =
      io.sluice.core.session.OneSlotPool.sessionsBuilder(
              controller,
              new TenantQuotas(
                  new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
                  "test_",
                  TenantQuotas.FailureMode.OPEN),
              ticker,
              clock,
              (delayNanos, task) -> () -> {},
              new SessionRecorder(
                  metrics,
                  new DecisionLog(DecisionLogSettings.every(), lines::add, null),
                  List.of()))
          .workflows(budget)
          .build();

  private AdmissionSession start(RecordingFront f, String workflow, int fanout) {
    long now = ticker.nanos();
    Subject subject =
        new Subject(
            "chat",
            POOL,
            INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            new Tenant("acme", TierPolicy.defaults("pro")),
            now,
            now + Duration.ofSeconds(30).toNanos(),
            null,
            0,
            false,
            fanout,
            workflow,
            io.sluice.core.session.Signals.NONE);
    AdmissionSession s = sessions.open(subject, f, Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"max_tokens\":10,\"tool_choice\":\"required\","
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},"
                + "{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}")
            .getBytes(StandardCharsets.UTF_8);
    s.begin(false, false, -1, now);
    s.decideWithBody(body, 0, body.length, now);
    return s;
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

  private double fanOut(String source) {
    var c = registry.find(MetricNames.FANOUT_WORK).tags("pool", "gpu", "source", source).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void admitted_recordCarriesFanOutWorkAndWorkflow_metricsBySource() throws Exception {
    metrics.bindWorkflows(budget);
    metrics.bindPools(controller);
    RecordingFront f = new RecordingFront(true);
    AdmissionSession s = start(f, "run-7", 2);
    assertThat(f.calls).containsExactly("admitted");
    assertThat(registry.find(MetricNames.WORKFLOWS_IN_FLIGHT).tag("pool", "gpu").gauge().value())
        .isEqualTo(1.0);

    s.release(Outcome.COMPLETED);

    AdmissionRecord r = records().get(0);
    assertThat(r.getWorkflowId()).isEqualTo("run-7");
    assertThat(r.getEstimate().getFanoutWorkUnits()).isEqualTo(2 * 10 + 100 + 1000 + 2 * 5000);
    assertThat(r.getEstimate().getWorkUnits())
        .isEqualTo(s.workUnits())
        .isGreaterThan(r.getEstimate().getFanoutWorkUnits());
    assertThat(fanOut("tools")).isEqualTo(20);
    assertThat(fanOut("tool_choice")).isEqualTo(100);
    assertThat(fanOut("parallel_tool_calls")).isEqualTo(1000);
    assertThat(fanOut("declared")).isEqualTo(10000);
    assertThat(registry.find(MetricNames.WORKFLOWS_IN_FLIGHT).tag("pool", "gpu").gauge().value())
        .isZero();
  }

  @Test
  void overBudget_refused429FanoutBudget_countedAndRecorded() throws Exception {
    AdmissionSession first = start(new RecordingFront(true), "run-7", 0);
    RecordingFront f = new RecordingFront(true);
    start(f, "run-7", 0);

    assertThat(f.calls).containsExactly("refused fanout_budget 429");
    assertThat(f.message).contains("workflow has 1 requests").contains("maxRequests 1");
    assertThat(
            registry
                .find(MetricNames.DECISIONS)
                .tags("pool", "gpu", "decision", "reject", "reason", "fanout_budget")
                .counter()
                .count())
        .isEqualTo(1.0);
    AdmissionRecord refused = records().get(0);
    assertThat(refused.getReason()).isEqualTo("fanout_budget");
    assertThat(refused.getHttpStatus()).isEqualTo(429);
    assertThat(refused.getWorkflowId()).isEqualTo("run-7");
    assertThat(refused.getRetryAfterSeconds()).isPositive();
    first.release(Outcome.COMPLETED);
    assertThat(budget.size()).isZero();
  }
}
