package io.sluice.bootstrap.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients that retry a refusal, in a replay of another policy (docs/replay.md, "Retries"): a
 * recorded retry is sent only once the replay refused its client's attempt, and a client the replay
 * refuses retries as the record shows clients do.
 */
class ReplayRetriesTest {
  @TempDir Path dir;

  /** One slot, {@code maxQueueWait} of queue, a 10 s deadline, Retry-After 1-10 s. */
  private static String policy(String maxQueueWait) {
    return """
        pools: {p: {capacity: 1000000, maxRequests: 1, maxMessageTimeout: 30s,
                    retryAfter: {min: 1s, max: 10s}}}
        classes: {c: {rank: 0, deadline: 10s, maxQueueWait: %s}}
        routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
        """
        .formatted(maxQueueWait);
  }

  /**
   * A timed record of {@code tenant}'s client whose deadline is 10 s after {@code firstMs}, sent at
   * {@code atMs}: admitted at once and served {@code serviceMs}, or ({@code serviceMs < 0}) refused
   * {@code refusedAfterMs} after it came.
   */
  private static String attempt(
      String tenant, long firstMs, long atMs, long serviceMs, long refusedAfterMs) {
    long deadlineNs = (firstMs + 10_000 - atMs) * 1_000_000L;
    String head =
        ("{\"schemaVersion\":2,\"tenant\":\"%s\",\"className\":\"c\",\"pool\":\"p\","
                + "\"route\":\"chat\",\"arrivalTime\":\"%s\",\"deadlineMs\":\"%d\","
                + "\"estimate\":{\"inputTokens\":\"100\",\"requestedOutputTokens\":\"100\"},")
            .formatted(
                tenant, Instant.ofEpochMilli(1_800_000_000_000L + atMs), deadlineNs / 1_000_000L);
    String tick = "\"arrivalTickNs\":\"" + (1_000_000_000_000L + atMs * 1_000_000L) + "\"";
    if (serviceMs < 0) {
      return head
          + ("\"decision\":\"DECISION_REJECT\",\"reason\":\"queue_full\",\"endedAfterMs\":\"%d\","
                  + "\"timing\":{%s,\"endedAfterNs\":\"%d\",\"deadlineAfterNs\":\"%d\"}}")
              .formatted(refusedAfterMs, tick, refusedAfterMs * 1_000_000L, deadlineNs);
    }
    return head
        + ("\"decision\":\"DECISION_ADMIT\",\"actual\":{\"outputTokens\":\"50\",\"reported\":true},"
                + "\"outcome\":\"OUTCOME_COMPLETED\",\"upstreamStatus\":200,\"serviceMs\":\"%d\","
                + "\"endedAfterMs\":\"%d\",\"timing\":{%s,\"admittedAfterNs\":\"0\","
                + "\"endedAfterNs\":\"%d\",\"deadlineAfterNs\":\"%d\"}}")
            .formatted(serviceMs, serviceMs, tick, serviceMs * 1_000_000L, deadlineNs);
  }

  /**
   * x refused at 0 and retried at 1 s (clients retry: 1 of 1), b served 2-3.4 s, then {@code more}.
   */
  private static List<String> clientsRetry_thenBHoldsTheSlot(String... more) {
    List<String> lines = new java.util.ArrayList<>();
    lines.add(attempt("x", 0, 0, -1, 0));
    lines.add(attempt("x", 0, 1000, 100, 0));
    lines.add(attempt("b", 2000, 2000, 1400, 0));
    lines.addAll(List.of(more));
    return lines;
  }

  private Replayer replay(String yaml, List<String> lines) throws Exception {
    Path f = dir.resolve("decisions.jsonl");
    Files.write(f, lines);
    try (RecordReader in = new RecordReader(List.of(f), 60_000, 1000);
        Replayer r = new Replayer(ConfigLoader.parse(yaml), Map.of(), Double.POSITIVE_INFINITY)) {
      r.run(in);
      return r;
    }
  }

  @Test
  void aRetryThatComesWhileTheCandidateStillQueuesItsAttempt_isNotSentOnceItIsAdmitted()
      throws Exception {
    // recorded: b holds the slot 0-3 s; a refused at 100 ms, its client retried at 1.1 s (refused
    // again). A candidate with a queue holds a's first attempt until 3 s: the retry comes while it
    // waits, and its client would never have sent it: a is served once, not twice
    List<String> lines =
        List.of(
            attempt("b", 0, 0, 3000, 0),
            attempt("a", 100, 100, -1, 0),
            attempt("a", 100, 1100, -1, 0));
    Replayer r = replay(policy("9s"), lines);
    assertThat(r.retriesNotSent).isEqualTo(1);
    assertThat(r.replayed).isEqualTo(2);
    assertThat(r.tally.total().arrivals).isEqualTo(2);
    assertThat(r.tally.total().goodput).isEqualTo(2);
    assertThat(r.agreement.disagreements).containsEntry("refuse:queue_full -> not_sent", 1L);
  }

  @Test
  void aClientTheCandidateRefusesWhereTheRecordAdmittedIt_retriesAsRecordedClientsDo()
      throws Exception {
    // recorded: x refused at 0 and retried at 1 s (so clients retry: 1 of 1); b holds the slot
    // 2-3.4 s; y admitted at 2.5 s. A candidate without a queue refuses y (the slot is b's): its
    // client retries a Retry-After later, is served, and is goodput
    List<String> lines = clientsRetry_thenBHoldsTheSlot(attempt("y", 2500, 2500, 500, 0));
    Replayer r = replay(policy("0s"), lines);
    assertThat(r.retriesDrawn).isEqualTo(1);
    assertThat(r.tally.rows().get("tenant p/y").arrivals).isEqualTo(2);
    assertThat(r.tally.rows().get("tenant p/y").goodput).isEqualTo(1);
    assertThat(r.tally.total().goodput).isEqualTo(3); // x's first attempt, b, y's retry
  }

  @Test
  void aClientTheCandidateRefusesSoonerThanTheRecord_retriesThen_notAtTheRecordedTime()
      throws Exception {
    // recorded: x refused and retried (clients retry); b holds the slot 2-3.4 s; y refused 2.9 s
    // after it came at 2.5 s, its retry at 8.4 s admitted. A candidate without a queue refuses y
    // at 2.5 s: its client retries a Retry-After later (after b), not at 8.4 s
    List<String> lines =
        clientsRetry_thenBHoldsTheSlot(
            attempt("y", 2500, 2500, -1, 2900), attempt("y", 2500, 8400, 500, 0));
    Replayer r = replay(policy("0s"), lines);
    assertThat(r.retriesDrawn).isEqualTo(1);
    assertThat(r.retriesNotSent).isEqualTo(2); // x's retry (x admitted), y's recorded retry
    assertThat(r.tally.rows().get("tenant p/y").arrivals).isEqualTo(2);
    assertThat(r.tally.rows().get("tenant p/y").goodput).isEqualTo(1);
  }
}
