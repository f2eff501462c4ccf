package io.sluice.bootstrap.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bootstrap.IsolatedRuntime;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.extproc.QueueTimer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run recorded on a virtual clock by the server's own core and decision log ({@link
 * RecordedRun}), then replayed against its own policy: the replay reproduces the recorded decisions
 * and goodput; the recorded run is deterministic; a replay writes no decision record.
 */
class RecordedReplayTest {
  @TempDir Path dir;

  private static final String POLICY =
      """
      pools: {p: {capacity: 1000000, maxRequests: 2, maxMessageTimeout: 10s,
                  defaultServiceTime: 1s, retryAfter: {min: 1s, max: 10s}}}
      classes: {c: {rank: 0, deadline: 8s, maxQueueWait: 2s, defaultOutputTokens: 64,
                    maxOutputTokens: 4096}}
      tiers: {standard: {weight: 1, maxInFlight: 0}}
      tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      decisionLog: {enabled: false}
      """;

  /** K = 2, 0.2 ms prefill and 10 ms decode per token. */
  private static final RecordedRun.Model MODEL = new RecordedRun.Model(2, 200_000, 10_000_000);

  /** {@code n} arrivals every {@code everyMs}, 100 prompt tokens, 60 output tokens each. */
  private static List<RecordedRun.Arrival> burst(int n, long everyMs) {
    String body =
        "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\""
            + " the".repeat(100)
            + "\"}]}";
    List<RecordedRun.Arrival> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(
          new RecordedRun.Arrival(
              i * everyMs * 1_000_000L,
              "chat",
              "p",
              "c",
              "t" + (i % 3),
              body,
              100,
              60,
              8_000_000_000L,
              Long.MAX_VALUE));
    }
    return out;
  }

  private static List<String> record(SluiceConfig c, List<RecordedRun.Arrival> arrivals) {
    List<String> lines = new ArrayList<>();
    RecordedRun.run(c, arrivals, MODEL, 2, lines::add);
    return lines;
  }

  @Test
  void aRecordedOverload_replayedAgainstItsPolicy_agreesOnEveryDecisionAndOnGoodput()
      throws Exception {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    // 30 arrivals 150 ms apart against 2 slots of ~0.6 s: waits, queue timeouts, retries
    List<String> lines = record(c, burst(30, 150));
    Path f = dir.resolve("decisions.jsonl");
    Files.write(f, lines);
    try (RecordReader in = new RecordReader(List.of(f), 60_000, 1000);
        Replayer r = new Replayer(c, Map.of(), MODEL.batchSlots())) {
      r.run(in);
      assertThat(r.replayed).isEqualTo(lines.size());
      assertThat(r.recorded.total().queued).isPositive();
      assertThat(r.recorded.total().refusedTotal()).isPositive();
      assertThat(r.agreement.disagreements).isEmpty();
      assertThat(r.agreement.share()).isEqualTo(1.0);
      assertThat(r.tally.total().goodput).isEqualTo(r.recorded.total().goodput);
    }
  }

  /** Clusters of three arrivals within one millisecond, {@code everyMs} apart. */
  private static List<RecordedRun.Arrival> clusters(int n, long everyMs) {
    List<RecordedRun.Arrival> one = burst(1, 0);
    List<RecordedRun.Arrival> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long at = (i / 3) * everyMs * 1_000_000L + (3 - i % 3) * 250_000L; // latest first
      RecordedRun.Arrival a = one.get(0);
      out.add(
          new RecordedRun.Arrival(
              at,
              a.route(),
              a.pool(),
              a.className(),
              "t" + (i % 3),
              a.body(),
              a.promptTokens(),
              a.outputTokens(),
              a.deadlineNanos(),
              a.cancelAfterNanos()));
    }
    out.sort(java.util.Comparator.comparingLong(RecordedRun.Arrival::atNanos));
    return out;
  }

  private Replayer replayed(SluiceConfig c, List<String> lines, String name) throws Exception {
    Path f = dir.resolve(name);
    Files.write(f, lines);
    try (RecordReader in = new RecordReader(List.of(f), 60_000, 1000);
        Replayer r = new Replayer(c, Map.of(), MODEL.batchSlots())) {
      r.run(in);
      return r;
    }
  }

  @Test
  void arrivalsWithinOneMillisecond_replayInTheirRecordedOrder_fromTheRecordsTiming()
      throws Exception {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    // three tenants' requests within one millisecond, every 300 ms: which one a freed slot goes
    // to follows the order they queued in, which the whole-millisecond arrival time cannot tell
    List<String> lines = record(c, clusters(30, 300));
    assertThat(lines).allMatch(l -> l.contains("\"timing\""));
    Replayer timed = replayed(c, lines, "timed.jsonl");
    assertThat(timed.agreement.disagreements).isEmpty();
    assertThat(timed.agreement.share()).isEqualTo(1.0);
    // the same records as an older release wrote them (no timing): replayed to the millisecond
    List<String> untimed = new ArrayList<>();
    for (String l : lines) {
      untimed.add(l.replaceAll(",\\s*\"timing\":\\s*\\{[^}]*\\}", ""));
    }
    assertThat(untimed).noneMatch(l -> l.contains("\"timing\""));
    Replayer old = replayed(c, untimed, "untimed.jsonl");
    assertThat(old.replayed).isEqualTo(timed.replayed);
    assertThat(old.agreement.share()).isLessThan(1.0);
  }

  @Test
  void aRecordedRun_isTheSameEveryTime() {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    assertThat(record(c, burst(30, 150))).isEqualTo(record(c, burst(30, 150)));
  }

  @Test
  void aReplaysRuntime_writesNoDecisionRecord_whateverThePolicySays() {
    SluiceConfig c =
        ConfigLoader.parse(
            POLICY.replace(
                "decisionLog: {enabled: false}",
                "decisionLog: {enabled: true, level: warn, sampleRate: 1.0}"));
    VirtualTime t = new VirtualTime(RecordedRun.START_MILLIS);
    try (QueueTimer wheel = new QueueTimer();
        IsolatedRuntime rt = IsolatedRuntime.forReplay(c, t, t.clock(), wheel, t)) {
      assertThat(rt.runtime().decisionLog().wants(true)).isFalse();
      assertThat(rt.runtime().decisionLog().wants(false)).isFalse();
    }
  }
}
