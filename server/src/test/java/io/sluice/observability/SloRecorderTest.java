package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.Charge;
import io.sluice.core.session.CheckNotes;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link SloRecorder} and {@link Correlation} fed with released and refused events built from
 * facts: the service-level meters (time to first token, time per output token, answers by result,
 * wasted tokens) and the decision record's request id and trace id.
 */
class SloRecorderTest {
  private static final long MS = 1_000_000L;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final SloMetrics slo = new SloMetrics(registry, () -> 0);
  private final SloRecorder recorder = new SloRecorder(slo);

  private static Subject subject(long deadlineMs, Signals signals) {
    return new Subject(
        "chat",
        OneSlotPool.POOL,
        OneSlotPool.INTERACTIVE,
        RequestFormat.OPENAI_CHAT,
        new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
        0,
        deadlineMs * MS,
        null,
        0,
        false,
        0,
        null,
        signals);
  }

  /**
   * An answer admitted at {@code admittedMs}, its first chunk {@code firstMs} after, held {@code
   * heldMs}, with {@code out} output tokens.
   */
  private static SessionEvent.Released released(
      long deadlineMs,
      long admittedMs,
      long firstMs,
      long heldMs,
      long out,
      Outcome outcome,
      int status) {
    RequestFacts f =
        new RequestFacts(
            subject(deadlineMs, Signals.NONE),
            1_800_000_000_000L,
            "body",
            null,
            new RequestFacts.Decided(Reason.ADMITTED, 50_000, 0, 0, -1, 0, null),
            new RequestFacts.Run(OneSlotPool.POOL, true, null, null, null, admittedMs * MS),
            null,
            CheckNotes.NONE,
            new RequestFacts.End(
                status,
                "seen",
                false,
                new Charge(Charge.REPORTED, 5, out, out, 0),
                outcome == Outcome.COMPLETED,
                firstMs < 0 ? -1 : firstMs * MS));
    return new SessionEvent.Released(f, outcome, heldMs * MS, new Usage(5, out, 0, true));
  }

  private double answers(String result) {
    return registry.find(SloMetrics.ANSWERS).tag("result", result).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  @Test
  void bind_makesTheAnswersSeriesAtZero_andTheClassLimits() {
    slo.bind(
        Set.of("default"), Map.of("interactive", Duration.ofSeconds(2)), Set.of("pro", "free"));
    assertThat(registry.find(SloMetrics.ANSWERS).counters()).hasSize(2 * 4);
    assertThat(answers("goodput")).isZero();
    assertThat(
            registry.find(SloMetrics.CLASS_WAIT_LIMIT).tag("class", "interactive").gauge().value())
        .isEqualTo(2.0);
    assertThat(registry.find("sluice.queue.wait.predicted").timers()).hasSize(1);
    // a reload without tier free removes its series
    slo.bind(Set.of("default"), Map.of("interactive", Duration.ofSeconds(2)), Set.of("pro"));
    assertThat(registry.find(SloMetrics.ANSWERS).counters()).hasSize(4);
  }

  @Test
  void answerWithinItsDeadline_isGoodput_withItsTimes() {
    // admitted 100 ms after arrival, first chunk 200 ms later, ended 1100 ms after admission,
    // 11 output tokens: TTFT 300 ms, TPOT (1100 - 200) / 10 = 90 ms
    recorder.on(released(5_000, 100, 200, 1_100, 11, Outcome.COMPLETED, 200));
    assertThat(answers("goodput")).isEqualTo(1);
    Timer ttft = registry.find(SloMetrics.TIME_TO_FIRST_TOKEN).tag("tier", "pro").timer();
    assertThat(ttft.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(300);
    Timer tpot = registry.find(SloMetrics.TIME_PER_OUTPUT_TOKEN).timer();
    assertThat(tpot.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(90);
    assertThat(registry.find(SloMetrics.WASTED_TOKENS).counters()).isEmpty();
  }

  @Test
  void lateCancelledAndFailedAnswers_areCounted_andTheirTokensWasted() {
    recorder.on(released(1_000, 100, 200, 1_100, 11, Outcome.COMPLETED, 200)); // ends at 1200
    recorder.on(released(5_000, 100, 200, 500, 7, Outcome.CANCELLED, 200));
    recorder.on(released(5_000, 100, -1, 500, 0, Outcome.COMPLETED, 503));
    assertThat(answers("late")).isEqualTo(1);
    assertThat(answers("cancelled")).isEqualTo(1);
    assertThat(answers("failed")).isEqualTo(1);
    assertThat(
            registry
                .find(SloMetrics.WASTED_TOKENS)
                .tag("cause", "deadline_missed")
                .counter()
                .count())
        .isEqualTo(11);
    assertThat(registry.find(SloMetrics.WASTED_TOKENS).tag("cause", "cancelled").counter().count())
        .isEqualTo(7);
    // a cancelled answer has no time per output token; the 503 had no first chunk
    assertThat(registry.find(SloMetrics.TIME_PER_OUTPUT_TOKEN).timer().count()).isEqualTo(1);
    assertThat(registry.find(SloMetrics.TIME_TO_FIRST_TOKEN).timer().count()).isEqualTo(2);
  }

  @Test
  void correlation_writesEnvoysRequestIdAndTraceId() {
    Correlation c = new Correlation("requestId", "traceparent", "b3", "b3TraceId");
    AdmissionRecord.Builder b = AdmissionRecord.newBuilder();
    c.write(
        facts(
            Signals.of(
                new String[] {"requestId", "traceparent"},
                new String[] {
                  "7f9c0a51-2c1e", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
                })),
        b);
    assertThat(b.getRequestId()).isEqualTo("7f9c0a51-2c1e");
    assertThat(b.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");

    AdmissionRecord.Builder b3 = AdmissionRecord.newBuilder();
    c.write(facts(Signals.of("b3TraceId", "a3ce929d0e0e4736")), b3);
    assertThat(b3.getTraceId()).isEqualTo("0000000000000000a3ce929d0e0e4736");

    AdmissionRecord.Builder bad = AdmissionRecord.newBuilder();
    c.write(facts(Signals.of("traceparent", "00-00000000000000000000000000000000-x-01")), bad);
    assertThat(bad.getTraceId()).isEmpty();
    assertThat(bad.getRequestId()).isEmpty();
  }

  private static RequestFacts facts(Signals signals) {
    return new RequestFacts(
        subject(1_000, signals),
        1_800_000_000_000L,
        "headers",
        null,
        new RequestFacts.Decided(Reason.TENANT_RATE, 1, 0, 0, -1, 0, null),
        new RequestFacts.Run(OneSlotPool.POOL, false, null, null, null, 0),
        null,
        CheckNotes.NONE,
        new RequestFacts.End(0, "none", false, Charge.NONE, false, -1));
  }
}
