package io.sluice.bootstrap.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The replay on a virtual clock: the real core decides, the upstream model serves. */
class ReplayTest {
  @TempDir Path dir;

  private static String policy(int maxRequests, String maxQueueWait) {
    return """
        pools: {p: {capacity: 1000000, maxRequests: %d, maxMessageTimeout: 30s}}
        classes: {c: {rank: 0, deadline: 10s, maxQueueWait: %s}}
        routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
        """
        .formatted(maxRequests, maxQueueWait);
  }

  /** An admitted record: arrival at {@code atMs}, served {@code serviceMs}. */
  private static String admitted(long atMs, long serviceMs, String tenant) {
    return ("{\"schemaVersion\":2,\"tenant\":\"%s\",\"className\":\"c\",\"pool\":\"p\","
            + "\"route\":\"chat\",\"arrivalTime\":\"%s\",\"deadlineMs\":\"10000\","
            + "\"estimate\":{\"inputTokens\":\"100\",\"outputReserveTokens\":\"100\","
            + "\"requestedOutputTokens\":\"100\"},\"decision\":\"DECISION_ADMIT\","
            + "\"actual\":{\"outputTokens\":\"50\",\"reported\":true},"
            + "\"outcome\":\"OUTCOME_COMPLETED\",\"upstreamStatus\":200,\"heldMs\":\"%d\","
            + "\"serviceMs\":\"%d\",\"endedAfterMs\":\"%d\"}")
        .formatted(
            tenant,
            Instant.ofEpochMilli(1_800_000_000_000L + atMs),
            serviceMs,
            serviceMs,
            serviceMs);
  }

  private Path records(List<String> lines) throws Exception {
    Path f = dir.resolve("decisions.jsonl");
    Files.write(f, lines);
    return f;
  }

  private Replayer replay(String yaml, Path records, double knee) throws Exception {
    SluiceConfig c = ConfigLoader.parse(yaml);
    try (RecordReader in = new RecordReader(List.of(records), 60_000, 1000);
        Replayer r = new Replayer(c, Map.of(), knee)) {
      r.run(in);
      return r;
    }
  }

  @Test
  void recordedPolicy_reproducesItsDecisions_andTheCandidateItsOwn() throws Exception {
    // one at a time, 1 s each, one arrival every 2 s: the recorded policy admitted all at once
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      lines.add(admitted(2000L * i, 1000, "t" + i));
    }
    Path f = records(lines);
    Replayer same = replay(policy(1, "0s"), f, Double.POSITIVE_INFINITY);
    assertThat(same.agreement.share()).isEqualTo(1.0);
    assertThat(same.tally.total().goodput).isEqualTo(10);
    assertThat(same.tally.total().wastedMillis).isZero();
  }

  @Test
  void aBurst_isRefusedBeyondTheLimit_queuedWithAWait_andGoodputFollowsTheDeadline()
      throws Exception {
    // ten at once, 4 s each, recorded as admitted at once (a policy of 10)
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      lines.add(admitted(0, 4000, "t" + i));
    }
    Path f = records(lines);
    Replayer tight = replay(policy(2, "0s"), f, Double.POSITIVE_INFINITY);
    Tally.Row t = tight.tally.total();
    assertThat(t.admitted).isEqualTo(2);
    assertThat(t.refusedTotal()).isEqualTo(8);
    assertThat(tight.agreement.share()).isEqualTo(0.2);

    Replayer queued = replay(policy(2, "9s"), f, Double.POSITIVE_INFINITY);
    Tally.Row q = queued.tally.total();
    // 2 start at 0 s, the next 2 wait for them (4 s); the rest are refused on their predicted wait
    assertThat(q.admitted).isGreaterThanOrEqualTo(4);
    assertThat(q.queued).isGreaterThanOrEqualTo(2);
    assertThat(q.waits.getValueAtPercentile(100)).isGreaterThanOrEqualTo(3900);
    assertThat(q.goodput).isEqualTo(q.admitted - q.cancelled);
    assertThat(q.admitted + q.refusedTotal()).isEqualTo(10);
  }

  @Test
  void beyondTheKnee_theRecordedSlowdownIsTakenOut_thenAppliedToTheReplayedConcurrency()
      throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      lines.add(admitted(0, 6000, "t" + i)); // four at once, 6 s each, beyond a knee of 2
    }
    Path f = records(lines);
    // the same four at once: a demand of 3 s each, shared at half speed, 6 s again: on time
    Replayer same = replay(policy(4, "0s"), f, 2);
    assertThat(same.tally.total().goodput).isEqualTo(4);
    assertThat(same.tally.total().wastedMillis).isZero();
    // a limit of 2: two run at full speed (3 s), the others are refused
    Replayer two = replay(policy(2, "0s"), f, 2);
    assertThat(two.tally.total().goodput).isEqualTo(2);
    assertThat(two.tally.rows().get("class p/c").goodputOutputTokens).isEqualTo(100);
  }

  @Test
  void aRecordDecidedAtItsBody_isDecidedThenInTheReplay_notAtItsArrival() throws Exception {
    // one slot; a arrives at 0 but its body comes at 500 ms (admitted then, served 1 s: ended
    // 1500 ms after arrival); b arrives at 200 ms, admitted at once, served 200 ms
    String a =
        admitted(0, 1000, "a").replace("\"endedAfterMs\":\"1000\"", "\"endedAfterMs\":\"1500\"");
    Path f = records(List.of(a, admitted(200, 200, "b")));
    Replayer r = replay(policy(1, "0s"), f, Double.POSITIVE_INFINITY);
    assertThat(r.agreement.disagreements).isEmpty();
    assertThat(r.agreement.share()).isEqualTo(1.0);
    assertThat(r.tally.total().goodput).isEqualTo(2);
  }

  @Test
  void aRetryOfAnAttemptTheCandidateAdmits_isNotSent() throws Exception {
    // recorded: a refused at 0 (queue_full), its client retried at 1 s with what it had left of
    // its 10 s deadline, admitted; a candidate that admits the first attempt never sees the retry
    String timing = ",\"timing\":{\"arrivalTickNs\":\"%d\",\"deadlineAfterNs\":\"%d\"%s}}";
    String refused =
        ("{\"tenant\":\"a\",\"className\":\"c\",\"pool\":\"p\",\"route\":\"chat\","
                + "\"arrivalTime\":\"%s\",\"deadlineMs\":\"10000\","
                + "\"estimate\":{\"inputTokens\":\"100\",\"requestedOutputTokens\":\"100\"},"
                + "\"decision\":\"DECISION_REJECT\",\"reason\":\"queue_full\"}")
            .formatted(Instant.ofEpochMilli(1_800_000_000_000L));
    refused =
        refused.substring(0, refused.length() - 1)
            + timing.formatted(1_000_000_000_000L, 10_000_000_000L, "");
    String retry = admitted(1000, 1000, "a").replace("\"10000\"", "\"9000\"");
    retry =
        retry.substring(0, retry.length() - 1)
            + timing.formatted(
                1_001_000_000_000L,
                9_000_000_000L,
                ",\"admittedAfterNs\":\"0\",\"endedAfterNs\":\"1000000000\"");
    Path f = records(List.of(refused, retry));
    Replayer wide = replay(policy(2, "0s"), f, Double.POSITIVE_INFINITY);
    assertThat(wide.retriesNotSent).isEqualTo(1);
    assertThat(wide.replayed).isEqualTo(1);
    assertThat(wide.tally.total().goodput).isEqualTo(1);
    assertThat(wide.agreement.disagreements)
        .containsEntry("refuse:queue_full -> admit", 1L)
        .containsEntry("admit -> not_sent", 1L);
  }

  @Test
  void aClientThatLeftMidAnswer_leavesAgain_andCompletesOnlyWhereItIsServedSooner()
      throws Exception {
    // one slot: a served 4 s; b queued behind it 4 s, its client left 2 s into its answer (6 s
    // after arrival): its recorded service (2 s) is the time until it left, not its answer's
    String a = admitted(0, 4000, "a");
    String b =
        admitted(0, 2000, "b")
            .replace("\"OUTCOME_COMPLETED\"", "\"OUTCOME_CANCELLED\"")
            .replace(
                "\"endedAfterMs\":\"2000\"", "\"endedAfterMs\":\"6000\",\"queueWaitMs\":\"4000\"");
    Path f = records(List.of(a, b));
    // as recorded: b leaves when it did, cancelled, not "completed" at that same instant
    Replayer same = replay(policy(1, "9s"), f, Double.POSITIVE_INFINITY);
    assertThat(same.agreement.share()).isEqualTo(1.0);
    assertThat(same.tally.total().cancelled).isEqualTo(1);
    assertThat(same.tally.total().goodput).isEqualTo(1);
    assertThat(same.tally.total().goodput).isEqualTo(same.recorded.total().goodput);
    // two slots: b starts at once; its answer takes its class's mean (4 s), before it leaves
    Replayer wide = replay(policy(2, "9s"), f, Double.POSITIVE_INFINITY);
    assertThat(wide.tally.total().cancelled).isZero();
    assertThat(wide.tally.total().goodput).isEqualTo(2);
  }

  @Test
  void malformedRecord_namesFileLineAndField() throws Exception {
    Path f =
        records(
            List.of(
                admitted(0, 100, "a"),
                admitted(10, 100, "a").replace("\"pool\":\"p\",", ""),
                admitted(20, 100, "a")));
    StringWriter out = new StringWriter();
    ReplayCommand cmd = new ReplayCommand();
    Path pol = dir.resolve("p.yaml");
    Files.writeString(pol, policy(1, "0s"));
    cmd.records = List.of(f);
    cmd.policy = pol;
    cmd.out = dir.resolve("out");
    assertThat(cmd.run(new PrintWriter(out))).isEqualTo(ReplayCommand.EXIT_BAD_RECORDS);
    assertThat(out.toString()).contains(f + ":2: pool: missing");
  }

  @Test
  void notJson_andBadValues_areRefusedWithTheirField() {
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> RecordReader.parse("{\"pool\":", "f:7"))
        .hasMessageStartingWith("f:7: not a sluice.v1.AdmissionRecord");
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> RecordReader.parse(admitted(0, 1, "a").replace("\"10000\"", "\"-5\""), "f:8"))
        .hasMessage("f:8: deadlineMs: -5 (expected: >= 0)");
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () ->
                RecordReader.parse(
                    admitted(0, 1, "a").replace("\"arrivalTime\"", "\"arrivedTime\""), "f:9"))
        .hasMessage("f:9: arrivalTime: missing (expected: an RFC 3339 time)");
  }

  @Test
  void command_writesTableJsonAndChart_candidateBesideBaseline() throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      lines.add(admitted(0, 1000, "t" + i));
    }
    Path f = records(lines);
    Path base = dir.resolve("base.yaml");
    Path cand = dir.resolve("cand.yaml");
    Files.writeString(base, policy(6, "0s"));
    Files.writeString(cand, policy(3, "0s"));
    ReplayCommand cmd = new ReplayCommand();
    cmd.records = List.of(f);
    cmd.policy = cand;
    cmd.baseline = base;
    cmd.out = dir.resolve("out");
    StringWriter out = new StringWriter();
    assertThat(cmd.run(new PrintWriter(out))).isZero();
    assertThat(out.toString())
        .contains("baseline agrees with the recorded decisions on 100.0 % of 6 requests")
        .contains("candidate agrees with the recorded decisions on 50.0 % of 6 requests");
    assertThat(dir.resolve("out/replay.json")).exists();
    assertThat(Files.readString(dir.resolve("out/replay.json"))).contains("\"candidate\"");
  }
}
