package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.core.time.Ticker;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.LoopbackRelay;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Late intake end to end (docs/intake.md, "Late requests"): two Sluice replicas on one Redis
 * (127.0.0.1:6379, started by CI), each behind its own emulated Envoy, each dispatching through its
 * own loopback relay ({@link LoopbackRelay}: the Envoy loopback listener, back into that replica's
 * emulator), all in front of one {@link ControlledUpstream} that holds its answers.
 *
 * <p>The premise, made true before the late request and checked on both replicas: batch's room is
 * full across the pool. The pool caps requests at 2 (one slot per replica's share) and each replica
 * holds a completions request of class batch (a shape intake never takes in) at the upstream, so
 * neither can start a batch request ({@link PoolState#canStart}). A late batch Responses request is
 * then taken in ({@code queued}, its id answered once the store acknowledged: the other replica
 * reads it at once), stays {@code queued} while there is no room (no dispatch reaches the
 * upstream), and when the fillers end it is dispatched, through a relay back into Sluice with the
 * trusted marker, admitted against batch, and reads {@code in_progress} then {@code completed} at
 * the other replica than the one that ran it; it reaches the upstream once.
 *
 * <p>Why slots, not work units: with replica shares a request larger than its class's reach on one
 * replica (that replica's share less the other classes' idle guarantees placed there) is accounted
 * as that reach, so a replica with a small share admits a batch request the pool as a whole has no
 * room for (the first run of this test, diagnosed: with A holding 151 of batch's 200 units, B's
 * {@code canStart(batch, 70)} was true, the 70 counted as B's reach of 26: the dispatched job would
 * run there, reading {@code in_progress}, before any room appeared). Slots are never scaled down
 * that way (docs/intake.md, "Late requests", end to end).
 *
 * <p>Held: the front end can hold (pool {@code maxMessageTimeout: 3s}, the emulator's {@code
 * max_message_timeout} 5 s, batch {@code maxQueueWait: 1s}): the pool refuses {@code
 * deadline_unreachable} or {@code queue_timeout}. Not held: neither the pool nor the emulator can
 * hold, so the pool refuses {@code pool_saturated} at once, which intake takes in as late too.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LateIntakeE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SECRET = "late-intake-e2e-dispatch-secret-0123456789";
  private static final String TENANT = "acme";
  private static final String RESPONSES = "/v1/responses";
  private static final String COMPLETIONS = "/v1/completions";

  private static final String MODEL_ANSWER =
      "{\"id\":\"resp_from_the_model\",\"object\":\"response\",\"status\":\"completed\","
          + "\"model\":\"m1\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
          + "\"content\":[{\"type\":\"output_text\",\"text\":\"the report\"}]}]}";

  /** The late request's output cap: work ~ prompt + 60, more than batch's room left (40). */
  private static final int LATE_TOKENS = 60;

  private final ControlledUpstream upstream =
      new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
  private final List<LoopbackRelay> relays = new ArrayList<>();
  private final List<SluiceServer> servers = new ArrayList<>();
  private final List<EnvoyExtProcEmulator> envoys = new ArrayList<>();

  @AfterEach
  void stop() {
    upstream.releaseHeld();
    relays.forEach(LoopbackRelay::close);
    envoys.forEach(EnvoyExtProcEmulator::close);
    servers.forEach(SluiceServer::close);
    upstream.close();
  }

  /** Both replicas' policy but for the relay each dispatches through. */
  private static Policy policy(String prefix, boolean held) {
    Policy p =
        Policy.onRedis(prefix)
            .with("replicas", "{renewInterval: 100ms, leaseTtl: 2s, keepShareFor: 1s, floor: 0.5}")
            .with("signals.tenant", "[{header: x-tenant-id}]")
            .with("pools.gpu.maxRequests", "2")
            .with("classes.interactive.reservedShare", "0.0")
            .with("classes.batch.maxQueueWait", "1s")
            .with("classes.batch.deadline", "30s")
            .with(
                "routes",
                "[{name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive,"
                    + " format: openai-chat},"
                    + " {name: completions, match: {pathPrefix: /v1/completions}, class: batch,"
                    + " format: openai-completions},"
                    + " {name: responses, match: {pathPrefix: /v1/responses}, class: batch,"
                    + " format: openai-responses}]")
            .with("intake.enabled", "true")
            .with("intake.whenLate", "{batch: accept}")
            .with("intake.freshness", "5m");
    if (held) {
      p.with("pools.gpu.maxMessageTimeout", "3s");
    }
    return p;
  }

  /** Starts replica {@code i}: its relay, then Sluice dispatching through it, then its Envoy. */
  private void startReplica(Policy policy, FilterConfig filter) throws IOException {
    LoopbackRelay relay = LoopbackRelay.start(Map.of());
    relays.add(relay);
    policy.with(
        "intake.dispatch",
        "{url: \""
            + relay.url()
            + "\", headers: {x-tenant-id: tenant}, timeout: 20s, lease: 30s, maxInFlight: 2}");
    SluiceServer s =
        SluiceServer.start(
            ConfigLoader.parse(policy.yaml()),
            new SluiceServer.Options(
                null,
                Map.of("SLUICE_DISPATCH_SECRET", SECRET),
                Ticker.system(),
                Clock.systemUTC()));
    servers.add(s);
    EnvoyExtProcEmulator envoy =
        EnvoyExtProcEmulator.connect("127.0.0.1:" + s.grpcPort(), filter, this::model);
    envoys.add(envoy);
    relay.via(envoy::sendAsync);
  }

  private void startTwo(boolean held) throws IOException {
    String prefix = "sluice_late_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    FilterConfig.Builder f = SluiceEnvoyHarness.recommendedFilter();
    if (held) {
      f.maxMessageTimeout(Duration.ofSeconds(5));
    }
    FilterConfig filter = f.build();
    startReplica(policy(prefix, held), filter);
    startReplica(policy(prefix, held), filter);
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              for (SluiceServer s : servers) {
                assertThat(s.replicaShares().get("gpu").mode())
                    .isEqualTo(ShareCoordinator.Mode.LEASED);
              }
            });
  }

  /**
   * The model behind Envoy: {@link #upstream} (it holds every answer until released), a Responses
   * request answered with a completed Responses object once let go.
   */
  private java.util.concurrent.CompletableFuture<UpstreamResponse> model(UpstreamRequest r) {
    var answer = upstream.send(r);
    if (!r.path().startsWith(RESPONSES)) {
      return answer;
    }
    return answer.thenApply(
        a ->
            new UpstreamResponse(
                200,
                HttpHeaders.of("content-type", "application/json"),
                ResponseBody.of(List.of(MODEL_ANSWER.getBytes(StandardCharsets.UTF_8)))));
  }

  private static PoolState pool(SluiceServer s) {
    return s.runtime().controller().pool("gpu");
  }

  /** Each replica's view of the pool (logged with every premise and status assertion). */
  private String state(long lateWork) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < servers.size(); i++) {
      SluiceServer s = servers.get(i);
      PoolState p = pool(s);
      PoolState.Snapshot n = p.snapshot(s.runtime().ticker().nanos());
      b.append(i == 0 ? "A" : "B")
          .append(": share=")
          .append(String.format("%.3f", p.replicaShare()))
          .append(" inFlight=")
          .append(n.requestsInFlight())
          .append(" work=")
          .append(n.workInFlight())
          .append(" batchWork=")
          .append(p.classWork("batch"))
          .append(" batchHeadroom=")
          .append(String.format("%.3f", p.classHeadroom("batch")))
          .append(" batchQueued=")
          .append(p.queueDepth("batch"))
          .append(" canStart(batch,")
          .append(lateWork)
          .append(")=")
          .append(p.canStart("batch", lateWork))
          .append("; ");
    }
    return b.toString();
  }

  private static String body(int maxTokens) {
    return "{\"model\":\"m1\",\"input\":\"Summarise the filings.\",\"max_output_tokens\":"
        + maxTokens
        + "}";
  }

  private HttpResult send(int replica, HttpRequest request) {
    return SluiceEnvoyHarness.result(envoys.get(replica).sendAsync(request));
  }

  private JsonNode poll(int replica, String id) throws IOException {
    HttpResult r =
        send(replica, HttpRequest.get(RESPONSES + "/" + id).header("x-tenant-id", TENANT).build());
    assertThat(r.status())
        .as("poll %s at replica %d: %s", id, replica, r.bodyUtf8())
        .isEqualTo(200);
    return JSON.readTree(r.bodyUtf8());
  }

  private String status(int replica, String id) {
    try {
      return poll(replica, id).get("status").asText();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Upstream requests that carried job {@code id}'s dispatch marker. */
  private long upstreamCallsOf(String id) {
    return upstream.received().stream().filter(r -> jobOf(r).equals(id)).count();
  }

  private static String jobOf(UpstreamRequest r) {
    String m = r.headers().first("x-sluice-dispatch").orElse("");
    return m.indexOf('.') < 0 ? "" : m.substring(0, m.indexOf('.'));
  }

  @Test
  void held_lateBatchRequest_takenIn_dispatchedWhenRoomAppears_statusAcrossReplicas()
      throws Exception {
    lateRequestRunsOnceWhenRoomAppears(true);
  }

  @Test
  void notHeld_poolSaturated_takenIn_dispatchedWhenRoomAppears_statusAcrossReplicas()
      throws Exception {
    lateRequestRunsOnceWhenRoomAppears(false);
  }

  /**
   * Holds one batch completions request (a shape intake never takes in) on replica {@code i}: sent
   * again until admitted (each replica keeps one slot, {@code replicas.floor: 0.5}; the retry
   * covers a share not granted yet).
   */
  private java.util.concurrent.CompletableFuture<HttpResult> fill(int i) throws Exception {
    int before = upstream.received().size();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < until) {
      var exchange =
          envoys
              .get(i)
              .sendAsync(
                  HttpRequest.post(
                          COMPLETIONS, "{\"model\":\"m1\",\"prompt\":\"fill\",\"max_tokens\":20}")
                      .header("x-tenant-id", TENANT)
                      .build());
      long step = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1_500);
      while (System.nanoTime() < step
          && !exchange.isDone()
          && upstream.received().size() == before) {
        Thread.sleep(20);
      }
      if (upstream.received().size() > before) {
        return exchange; // admitted: held at the upstream
      }
      if (!exchange.isDone()) {
        exchange.cancel(true);
      }
      Thread.sleep(200);
    }
    throw new AssertionError("filler never admitted on replica " + i + ": " + state(1));
  }

  private void lateRequestRunsOnceWhenRoomAppears(boolean held) throws Exception {
    assumeTrue(Policy.redisReachable(), "redis-server on 127.0.0.1:6379");
    startTwo(held);

    // the premise: every request slot of the pool held by a batch request, one on each replica
    var fillers = List.of(fill(0), fill(1));
    long lateWork = 10 + LATE_TOKENS;
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              for (SluiceServer s : servers) {
                assertThat(pool(s).canStart("batch", lateWork))
                    .as("premise, batch's room full on every replica: %s", state(lateWork))
                    .isFalse();
              }
            });

    // late: taken in, its id answered once the store acknowledged (the other replica reads it)
    HttpResult late =
        send(
            0,
            HttpRequest.post(RESPONSES, body(LATE_TOKENS)).header("x-tenant-id", TENANT).build());
    assertThat(late.status())
        .as("late answer %s; %s", late.bodyUtf8(), state(lateWork))
        .isEqualTo(200);
    assertThat(late.header("x-sluice-reason")).contains("accepted");
    JsonNode queued = JSON.readTree(late.bodyUtf8());
    assertThat(queued.get("status").asText()).isEqualTo("queued");
    String id = queued.get("id").asText();
    assertThat(id).matches("resp_[0-9a-f]{32}");
    assertThat(status(1, id)).as("at B at once: %s", state(lateWork)).isEqualTo("queued");
    var takenIn =
        servers.get(0).registry().find("sluice.intake.late").tags("event", "queued").counters();
    assertThat(takenIn).hasSize(1);
    assertThat(takenIn.iterator().next().count()).isEqualTo(1);
    assertThat(takenIn.iterator().next().getId().getTag("reason"))
        .as("the pool's refusal it was taken in instead of")
        .isIn(held ? List.of("deadline_unreachable", "queue_timeout") : List.of("pool_saturated"));

    // no room: it waits, never reaches the upstream, reads queued at both replicas
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2_500);
    while (System.nanoTime() < until) {
      for (int r = 0; r < 2; r++) {
        assertThat(status(r, id))
            .as("no room yet, at %d: %s", r, state(lateWork))
            .isEqualTo("queued");
      }
      assertThat(upstreamCallsOf(id)).as("no room yet: %s", state(lateWork)).isZero();
      Thread.sleep(200);
    }

    // room appears: the filler ends; the job is dispatched through a relay, admitted on batch
    upstream.releaseHeld();
    for (var f : fillers) {
      assertThat(SluiceEnvoyHarness.result(f).status()).isEqualTo(200);
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> upstreamCallsOf(id) == 1);
    int ran = pool(servers.get(0)).classWork("batch") > 0 ? 0 : 1; // the replica admitting it
    int other = 1 - ran;
    assertThat(pool(servers.get(ran)).classWork("batch")).as(state(lateWork)).isPositive();
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(status(other, id))
                    .as("running, polled at the other replica: %s", state(lateWork))
                    .isEqualTo("in_progress"));

    // the upstream answers: completed, read at the other replica, run once
    upstream.releaseHeld();
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(status(other, id)).isEqualTo("completed"));
    JsonNode done = poll(other, id);
    assertThat(done.get("id").asText()).isEqualTo(id);
    assertThat(done.at("/output/0/content/0/text").asText()).isEqualTo("the report");
    Thread.sleep(1_500); // two more dispatch steps: nothing claims it again
    assertThat(upstreamCallsOf(id)).as("run once").isEqualTo(1);
    assertThat(relays.get(0).reachedUpstream(id) + relays.get(1).reachedUpstream(id)).isEqualTo(1);
    assertThat(status(ran, id)).isEqualTo("completed");
  }
}
