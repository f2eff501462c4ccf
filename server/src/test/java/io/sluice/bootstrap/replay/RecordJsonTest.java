package io.sluice.bootstrap.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.util.JsonFormat;
import com.google.protobuf.util.Timestamps;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.Decision;
import io.sluice.api.v1.Degrade;
import io.sluice.api.v1.Estimate;
import io.sluice.api.v1.Outcome;
import io.sluice.api.v1.ReplayTiming;
import io.sluice.api.v1.Usage;
import org.junit.jupiter.api.Test;

/** The streaming record reader reads what protobuf's JSON printer writes, in all its forms. */
class RecordJsonTest {
  private static AdmissionRecord record(long arrivalMillis) {
    return AdmissionRecord.newBuilder()
        .setSchemaVersion(2)
        .setArrivalTime(Timestamps.fromMillis(arrivalMillis))
        .setPool("p")
        .setClassName("c")
        .setTenant("t\"1")
        .setTier("gold")
        .setRoute("chat")
        .setRequestFormat("openai-chat")
        .setDeadlineMs(8000)
        .setDecision(Decision.DECISION_DEGRADE)
        .setDegrade(Degrade.newBuilder().setRung("concise").setPool("p"))
        .setQueuePosition(2)
        .setQueueWaitMs(30)
        .setDecisionLatencyUs(1500)
        .setEstimate(
            Estimate.newBuilder()
                .setInputTokens(120)
                .setOutputReserveTokens(64)
                .setRequestedOutputTokens(256)
                .setWorkUnits(376)
                .setMethod("bytes"))
        .setActual(
            Usage.newBuilder()
                .setInputTokens(118)
                .setOutputTokens(40)
                .setReported(true)
                .setMeteredOutputTokens(41))
        .setOutcome(Outcome.OUTCOME_COMPLETED)
        .setUpstreamStatus(200)
        .setHeldMs(700)
        .setServiceMs(650)
        .setEndedAfterMs(690)
        .setMessage("{ not a field } [1,2]")
        .setTiming(
            ReplayTiming.newBuilder()
                .setArrivalTickNs(1_000_123_456_789L)
                .setDecidedAfterNs(9_500_000)
                .setAdmittedAfterNs(39_600_000)
                .setEndedAfterNs(690_400_000)
                .setDeadlineAfterNs(8_000_000_000L))
        .build();
  }

  private static void readsAllFields(Recorded r, long arrivalMillis) {
    assertThat(r.arrivalMillis()).isEqualTo(arrivalMillis);
    assertThat(r.pool()).isEqualTo("p");
    assertThat(r.className()).isEqualTo("c");
    assertThat(r.tenant()).isEqualTo("t\"1");
    assertThat(r.route()).isEqualTo("chat");
    assertThat(r.format()).isEqualTo("openai-chat");
    assertThat(r.deadlineMs()).isEqualTo(8000);
    assertThat(r.decided()).isEqualTo("degrade:concise");
    assertThat(r.queueWaitMs()).isEqualTo(30);
    assertThat(r.inputTokens()).isEqualTo(120);
    assertThat(r.actualInputTokens()).isEqualTo(118);
    assertThat(r.requestedOutputTokens()).isEqualTo(256);
    assertThat(r.serviceMs()).isEqualTo(650);
    assertThat(r.outputTokens()).isEqualTo(40);
    assertThat(r.outcome()).isEqualTo(Outcome.OUTCOME_COMPLETED);
    assertThat(r.upstreamStatus()).isEqualTo(200);
    assertThat(r.endedAfterMs()).isEqualTo(690);
    assertThat(r.decideAfterMs()).isEqualTo(10); // 690 - 30 - 650
    assertThat(r.timing())
        .isEqualTo(
            new Recorded.Timing(
                1_000_123_456_789L, 9_500_000, 39_600_000, 690_400_000, 8_000_000_000L, 0));
  }

  @Test
  void readsTheJsonPrintersRecord_camelOrProtoNames_compactOrNot() throws Exception {
    long at = 1_800_000_000_123L;
    AdmissionRecord r = record(at);
    for (JsonFormat.Printer p :
        new JsonFormat.Printer[] {
          JsonFormat.printer().omittingInsignificantWhitespace(),
          JsonFormat.printer(),
          JsonFormat.printer().preservingProtoFieldNames(),
        }) {
      readsAllFields(RecordReader.parse(p.print(r), "f:1"), at);
    }
  }

  @Test
  void readsNumbersAsNumbers_enumsByNumber_andSkipsWhatItDoesNotRead() {
    String json =
        "{\"unknownObject\":{\"a\":[1,{\"b\":null}]},\"arrivalTime\":\"2027-01-15T08:00:00.5+01:00\","
            + "\"pool\":\"p\",\"className\":\"c\",\"decision\":4,\"reason\":\"queue_full\","
            + "\"deadlineMs\":5000,\"estimate\":{\"inputTokens\":7,\"extra\":[]},"
            + "\"outcome\":5,\"capacity\":{\"workUnits\":\"9\"},\"route\":null}";
    Recorded r = RecordReader.parse(json, "f:2");
    assertThat(r.arrivalMillis())
        .isEqualTo(java.time.Instant.parse("2027-01-15T07:00:00.500Z").toEpochMilli());
    assertThat(r.decided()).isEqualTo("refuse:queue_full");
    assertThat(r.deadlineMs()).isEqualTo(5000);
    assertThat(r.inputTokens()).isEqualTo(7);
    assertThat(r.route()).isEmpty();
    assertThat(r.serviceMs()).isEqualTo(-1);
    assertThat(r.timing()).isNull();
  }

  @Test
  void anAnswer_isSkipped_andBadValuesNameTheirField() {
    String base = "{\"arrivalTime\":\"2027-01-15T08:00:00Z\",\"pool\":\"p\",\"className\":\"c\",";
    assertThat(RecordReader.parse(base + "\"decision\":\"DECISION_ANSWER\"}", "f:1")).isNull();
    assertThatThrownBy(
            () ->
                RecordReader.parse(
                    base + "\"decision\":\"DECISION_ADMIT\",\"serviceMs\":\"x\"}", "f:3"))
        .hasMessage("f:3: not a sluice.v1.AdmissionRecord: serviceMs: x (expected: an integer)");
    assertThatThrownBy(() -> RecordReader.parse(base + "\"decision\":\"NOPE\"}", "f:4"))
        .hasMessage("f:4: decision: NOPE (expected: DECISION_ADMIT, _QUEUE, _DEGRADE, _REJECT)");
    assertThatThrownBy(
            () ->
                RecordReader.parse(
                    base.replace("2027-01-15T08:00:00Z", "yesterday")
                        + "\"decision\":\"DECISION_ADMIT\"}",
                    "f:5"))
        .hasMessage("f:5: arrivalTime: yesterday (expected: an RFC 3339 time)");
    assertThatThrownBy(() -> RecordReader.parse(base + "\"decision\":1} x", "f:6"))
        .hasMessageStartingWith("f:6: not a sluice.v1.AdmissionRecord");
  }

  /**
   * A budget refusal's record names its budget ({@code budgetRefusal}, 71) and the charges ({@code
   * budgets}, 70): the replay reads it as the refusal it was, and reads the same record without
   * them (written before them) alike.
   */
  @Test
  void aBudgetRefusalsRecord_withOrWithoutItsBudget_readsAsTheSameRefusal() throws Exception {
    AdmissionRecord old =
        record(1_800_000_000_123L).toBuilder()
            .clearDegrade()
            .setDecision(Decision.DECISION_REJECT)
            .setReason("budget_exhausted")
            .setHttpStatus(402)
            .setOutcome(Outcome.OUTCOME_REJECTED)
            .clearServiceMs()
            .build();
    AdmissionRecord withBudget =
        old.toBuilder()
            .setBudgetRefusal(
                io.sluice.api.v1.BudgetRefusal.newBuilder()
                    .setName("daily")
                    .setScope("tenant")
                    .setGroup("pro")
                    .setMeter("money")
                    .setPeriodEnd("2026-12-07T00:00:00+01:00"))
            .addBudgets(io.sluice.api.v1.BudgetCharge.newBuilder().setName("weekly").setReserved(0))
            .build();
    for (JsonFormat.Printer p :
        new JsonFormat.Printer[] {
          JsonFormat.printer().omittingInsignificantWhitespace(),
          JsonFormat.printer().preservingProtoFieldNames(),
        }) {
      String json = p.print(withBudget);
      assertThat(json).contains("2026-12-07T00:00:00+01:00");
      Recorded now = RecordReader.parse(json, "new:1");
      Recorded before = RecordReader.parse(p.print(old), "old:1");
      assertThat(now.decided()).isEqualTo("refuse:budget_exhausted");
      assertThat(now).usingRecursiveComparison().ignoringFields("source").isEqualTo(before);
    }
  }
}
