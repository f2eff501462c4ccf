package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.num;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Struct;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.emulator.Route;
import io.sluice.emulator.RouteTable;
import io.sluice.upstream.UpstreamRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 18 through the Envoy emulator: the degrade ladder's concise rung (per request format: the
 * body Envoy forwards is valid JSON with the cap clamped and the instruction added, content-length
 * matches, the re-estimate is what the pool counts), the reroute rung (routing header with
 * clear_route_cache, model rewrite, counted against the target pool, never overfilling it),
 * degradation forbidden by route and by signal, engine priority per preset, the deadline carried
 * downstream (and Envoy's router timeout), queue transparency.
 */
@Timeout(60)
class DegradeE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String INSTRUCTION = "Answer in at most three sentences.";

  private SluiceEnvoyHarness h;

  @AfterEach
  void close() {
    if (h != null) {
      h.close();
    }
  }

  /** The e2e policy with a 600-unit pool: one 400-token answer fits, a second does not. */
  private static Policy ladderPolicy() {
    return Policy.base()
        .with("pools.gpu.capacity", "600")
        .with("classes.interactive.defaultOutputTokens", "300")
        .with(
            "classes.interactive.degrade",
            "{waitAbove: 1s, ladder: [{concise: {maxOutputTokens: 50, instruction: '"
                + INSTRUCTION
                + "'}}]}")
        .with(
            "routes",
            "[{name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format:"
                + " openai-chat},"
                + " {name: responses, match: {pathPrefix: /v1/responses}, class: interactive,"
                + " format: openai-responses},"
                + " {name: messages, match: {pathPrefix: /v1/messages}, class: interactive, format:"
                + " anthropic-messages},"
                + " {name: auto, match: {pathPrefix: /auto}, class: interactive, format: auto},"
                + " {name: strict, match: {pathPrefix: /strict/v1/chat/completions}, class:"
                + " interactive, format: openai-chat, degrade: false},"
                + " {name: completions, match: {pathPrefix: /v1/completions}, class: batch,"
                + " format: openai-completions}]");
  }

  static Stream<Arguments> formats() {
    String user = "\"content\":\"Say hello to the integration test.\"";
    return Stream.of(
        Arguments.of(
            "chat max_tokens",
            "/v1/chat/completions",
            "{\"model\":\"gpt-4o\",\"max_tokens\":400,\"temperature\":0.70,\"messages\":[{\"role\":\"user\","
                + user
                + "}]}",
            "max_tokens"),
        Arguments.of(
            "chat max_completion_tokens",
            "/v1/chat/completions",
            "{\"model\":\"gpt-4o\",\"max_completion_tokens\":400,\"messages\":[{\"role\":\"system\","
                + "\"content\":\"Be kind.\"},{\"role\":\"user\","
                + user
                + "}]}",
            "max_completion_tokens"),
        Arguments.of(
            "chat without a cap (the class default 300)",
            "/v1/chat/completions",
            "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\"," + user + "}]}",
            "max_tokens"),
        Arguments.of(
            "responses",
            "/v1/responses",
            "{\"model\":\"gpt-4o\",\"max_output_tokens\":400,\"input\":\"Say hello to the"
                + " integration test.\"}",
            "max_output_tokens"),
        Arguments.of(
            "anthropic messages",
            "/v1/messages",
            "{\"model\":\"claude-sonnet-4\",\"max_tokens\":400,\"system\":\"Be kind.\","
                + "\"messages\":[{\"role\":\"user\","
                + user
                + "}]}",
            "max_tokens"),
        Arguments.of(
            "auto (anthropic by its members)",
            "/auto",
            "{\"model\":\"claude-sonnet-4\",\"max_tokens\":400,\"system\":[{\"type\":\"text\","
                + "\"text\":\"Be kind.\"}],\"messages\":[{\"role\":\"user\","
                + user
                + "}]}",
            "max_tokens"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("formats")
  void concise_clampsTheCapInTheBodyEnvoyForwards_andChargesTheReEstimate(
      String name, String path, String body, String capField) throws Exception {
    h = SluiceEnvoyHarness.start(ladderPolicy());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(chat(chatBody(400, false)).build());
    h.awaitUpstreamRequests(1);
    long fullWork = h.pool().workInFlight();
    assertThat(fullWork).isGreaterThan(400);

    CompletableFuture<HttpResult> second =
        h.sendAsync(
            HttpRequest.post(path, body)
                .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                .build());
    List<UpstreamRequest> received = h.awaitUpstreamRequests(2);
    UpstreamRequest sent = received.get(1);
    JsonNode forwarded = JSON.readTree(sent.body()); // valid JSON
    assertThat(forwarded.path(capField).asLong()).as("cap").isEqualTo(50);
    assertThat(sent.headers().first("content-length"))
        .as("content-length of the mutated body")
        .hasValue(Integer.toString(sent.body().length));
    String text = new String(sent.body(), StandardCharsets.UTF_8);
    assertThat(text).contains(INSTRUCTION);
    assertThat(forwarded.path("model").asText())
        .isEqualTo(JSON.readTree(body).path("model").asText());
    if (path.startsWith("/v1/chat")) {
      JsonNode first0 = forwarded.path("messages").get(0);
      assertThat(first0.path("role").asText()).isEqualTo("system");
      assertThat(first0.path("content").asText()).endsWith(INSTRUCTION);
    }
    if (name.startsWith("chat max_tokens")) { // numbers are forwarded as written
      assertThat(text).contains("\"temperature\":0.70");
    }
    // what the pool counts is the re-estimate: the concise reserve, not the 400 asked for
    long degradedWork = h.pool().workInFlight() - fullWork;
    assertThat(degradedWork).isBetween(51L, 120L);

    h.upstream.releaseHeld();
    HttpResult r = SluiceEnvoyHarness.result(second);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("x-sluice-degraded")).hasValue("concise");
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("degrade");
    assertThat(str(md, "reason")).isEqualTo("degraded");
    assertThat(str(md, "degraded")).isEqualTo("concise");
    assertThat(str(md, "degrade_trigger")).isEqualTo("wait");
    assertThat((long) num(md, "work_units")).isEqualTo(degradedWork);
    assertThat((long) num(md, "est_output_tokens")).isEqualTo(50);
    assertThat(SluiceEnvoyHarness.result(first).header("x-sluice-degraded")).isEmpty();
    assertThat(
            h.counter(
                "sluice.degraded",
                "pool",
                "gpu",
                "class",
                "interactive",
                "rung",
                "concise",
                "trigger",
                "wait"))
        .isEqualTo(1);
    assertThat(h.counter("sluice.decisions", "decision", "degrade", "reason", "degraded"))
        .isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(2);
  }

  @Test
  void conciseWithoutRoom_fallsThroughToTodaysRefusal() throws Exception {
    h = SluiceEnvoyHarness.start(ladderPolicy().with("pools.gpu.capacity", "440"));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(chat(chatBody(400, false)).build());
    h.awaitUpstreamRequests(1);

    HttpResult r = h.send(chat(chatBody(400, false)).build());

    assertThat(r.status()).isEqualTo(503);
    assertThat(r.header("x-sluice-reason")).hasValue("pool_saturated");
    assertThat(h.counter("sluice.degrade.skipped", "rung", "concise", "cause", "no_room"))
        .isEqualTo(1);
    // the refusal tells the client what its Retry-After came from
    JsonNode err = JSON.readTree(r.body()).path("error");
    assertThat(err.has("predicted_wait_ms")).isTrue();
    assertThat(r.header("x-sluice-predicted-wait-ms"))
        .hasValue(Long.toString(err.path("predicted_wait_ms").asLong()));
    h.upstream.releaseHeld();
    SluiceEnvoyHarness.result(first);
    h.awaitNothingInFlight();
  }

  @Test
  void forbiddenByRouteOrBySignal_isNeverDegraded() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            ladderPolicy().with("signals.noDegrade", "[{metadata: x-sluice-no-degrade}]"));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(chat(chatBody(400, false)).build());
    h.awaitUpstreamRequests(1);

    HttpResult byRoute =
        h.send(
            HttpRequest.post("/strict/v1/chat/completions", chatBody(400, false))
                .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                .build());
    HttpResult bySignal =
        h.send(
            chat(chatBody(400, false))
                .routeGrpcInitialMetadata("x-sluice-no-degrade", "true")
                .build());

    for (HttpResult r : List.of(byRoute, bySignal)) {
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.header("x-sluice-degraded")).isEmpty();
    }
    assertThat(h.upstream.received()).hasSize(1);
    assertThat(h.counter("sluice.degraded")).isZero();
    assertThat(h.counter("sluice.degrade.skipped", "rung", "all", "cause", "forbidden"))
        .isEqualTo(2);
    h.upstream.releaseHeld();
    SluiceEnvoyHarness.result(first);
    h.awaitNothingInFlight();
  }

  @Test
  void reroute_setsTheRoutingHeaderWithClearRouteCache_andCountsAgainstTheTargetPool()
      throws Exception {
    ControlledUpstream small = new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    Policy policy =
        Policy.base()
            .with("pools.gpu.capacity", "600")
            .with("pools.small", "{capacity: 1000}")
            .with(
                "classes.interactive.degrade",
                "{waitAbove: 1s, ladder: [{reroute: {pool: small, header: x-backend, value:"
                    + " small, model: small-model}}]}");
    h =
        SluiceEnvoyHarness.startRouted(
            policy,
            SluiceEnvoyHarness.recommendedFilter().build(),
            big ->
                RouteTable.of(
                    Route.header("small", "x-backend", "small", small),
                    Route.catchAll("big", big)));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(chat(chatBody(400, false)).build());
    h.awaitUpstreamRequests(1);

    // two rerouted answers fit in the small pool (1000 units, 100 guaranteed to batch), a third
    // does not
    CompletableFuture<HttpResult> second = h.sendAsync(chat(chatBody(400, false)).build());
    CompletableFuture<HttpResult> third = h.sendAsync(chat(chatBody(400, false)).build());
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(5))
          .until(() -> small.received().size() >= 2);
    } catch (RuntimeException e) {
      throw new AssertionError(
          "small received "
              + small.received().size()
              + ", big received "
              + h.upstream.received().size()
              + ", second "
              + (second.isDone() ? second.join() : "pending")
              + ", third "
              + (third.isDone() ? third.join() : "pending"),
          e);
    }
    io.sluice.core.admission.PoolState smallPool = h.server.runtime().controller().pool("small");
    long now = h.server.runtime().ticker().nanos();
    assertThat(smallPool.snapshot(now).requestsInFlight()).isEqualTo(2);
    assertThat(smallPool.snapshot(now).workInFlight()).isLessThanOrEqualTo(1000);
    assertThat(h.pool().requestsInFlight()).as("the big pool holds only the first").isEqualTo(1);
    JsonNode forwarded = JSON.readTree(small.received().get(0).body());
    assertThat(forwarded.path("model").asText()).isEqualTo("small-model");
    assertThat(small.received().get(0).headers().first("content-length"))
        .hasValue(Integer.toString(small.received().get(0).body().length));

    HttpResult fourth = h.send(chat(chatBody(400, false)).build());
    assertThat(fourth.status()).as("the small pool is full: never overfilled").isEqualTo(503);
    assertThat(h.counter("sluice.degrade.skipped", "rung", "reroute", "cause", "no_room"))
        .isEqualTo(1);
    assertThat(smallPool.snapshot(h.server.runtime().ticker().nanos()).requestsInFlight())
        .isEqualTo(2);

    h.upstream.releaseHeld();
    small.releaseHeld();
    for (CompletableFuture<HttpResult> f : List.of(second, third)) {
      HttpResult r = SluiceEnvoyHarness.result(f);
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.routeName()).hasValue("small");
      assertThat(r.header("x-sluice-degraded")).hasValue("reroute");
      assertThat(str(sluiceMetadata(r), "rerouted_to")).isEqualTo("small");
    }
    assertThat(SluiceEnvoyHarness.result(first).routeName()).hasValue("big");
    h.awaitNothingInFlight();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () -> smallPool.snapshot(h.server.runtime().ticker().nanos()).requestsInFlight() == 0);
    small.close();
  }

  static Stream<Arguments> presets() {
    return Stream.of(
        Arguments.of("vllm", "0", "1"),
        Arguments.of("sglang", "1", "0"),
        Arguments.of("tensorrt-llm", "1", "0.5"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("presets")
  void enginePriority_followsTheEnginesPolarity(String preset, String interactive, String batch)
      throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with(
                    "pools.gpu.enginePriority",
                    "{preset: " + preset + ", header: x-engine-priority}"));
    h.send(chat(chatBody(20, false)).build());
    h.send(
        HttpRequest.post(
                "/v1/completions", "{\"model\":\"gpt-4o\",\"max_tokens\":20,\"prompt\":\"Hi\"}")
            .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
            .build());
    List<UpstreamRequest> received = h.awaitUpstreamRequests(2);
    JsonNode a = JSON.readTree(received.get(0).body());
    JsonNode b = JSON.readTree(received.get(1).body());
    assertThat(a.path("priority").asText()).isEqualTo(interactive);
    assertThat(b.path("priority").asText()).isEqualTo(batch);
    assertThat(a.path("priority").isNumber()).isTrue();
    assertThat(received.get(0).headers().first("x-engine-priority")).hasValue(interactive);
    assertThat(received.get(1).headers().first("content-length"))
        .hasValue(Integer.toString(received.get(1).body().length));
    h.awaitNothingInFlight();
  }

  @Test
  void deadline_isCarriedDownstream_andBecomesEnvoysRouterTimeoutWhenAllowed() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with("classes.interactive.deadline", "8s")
                .with("responses.upstreamTimeout", "true"),
            SluiceEnvoyHarness.recommendedFilter().allowEnvoy(true).build());
    HttpResult r = h.send(chat(chatBody(20, false)).build());
    assertThat(r.status()).isEqualTo(200);
    UpstreamRequest sent = h.awaitUpstreamRequests(1).get(0);
    long left = Long.parseLong(sent.headers().first("x-sluice-deadline-ms").orElseThrow());
    assertThat(left).isBetween(7_000L, 8_000L);
    assertThat(sent.headers().first("x-envoy-upstream-rq-timeout-ms"))
        .as("the router consumes it")
        .isEmpty();
    assertThat(r.routerTimeout()).isPresent();
    assertThat(r.routerTimeout().orElseThrow().toMillis()).isBetween(7_000L, 8_000L);
    Struct md = sluiceMetadata(r);
    assertThat(num(md, "deadline_remaining_ms")).isBetween(7_000.0, 8_000.0);
    assertThat(num(md, "deadline_epoch_ms")).isGreaterThan(System.currentTimeMillis());
    h.awaitNothingInFlight();
  }

  @Test
  void withoutAllowEnvoy_theTimeoutHeaderIsRejectedByEnvoy_andTheRouteTimeoutStands()
      throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base().with("responses.upstreamTimeout", "true"),
            SluiceEnvoyHarness.recommendedFilter().build());
    HttpResult r = h.send(chat(chatBody(20, false)).build());
    assertThat(r.status()).isEqualTo(200);
    assertThat(h.stats().rejectedHeaderMutations()).isGreaterThanOrEqualTo(1);
    assertThat(h.awaitUpstreamRequests(1).get(0).headers().first("x-sluice-deadline-ms"))
        .isPresent();
    h.awaitNothingInFlight();
  }

  @Test
  void aRequestThatWaited_isToldHowLong_andTheOldestAgeIsExported() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with("pools.gpu.capacity", "600")
                .with("pools.gpu.maxMessageTimeout", "5s")
                .with("classes.interactive.maxQueueWait", "3s"));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(chat(chatBody(400, false)).build());
    h.awaitUpstreamRequests(1);
    CompletableFuture<HttpResult> second = h.sendAsync(chat(chatBody(400, false)).build());
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.gauge("sluice.queue.depth", "class", "interactive") == 1);
    Thread.sleep(50); // the queued request ages (bounded: one short pause)
    assertThat(h.gauge("sluice.queue.oldest.age", "class", "interactive")).isGreaterThan(0.0);

    h.upstream.releaseHeld();
    SluiceEnvoyHarness.result(first);
    h.awaitUpstreamRequests(2);
    h.upstream.releaseHeld();
    HttpResult r = SluiceEnvoyHarness.result(second);
    assertThat(r.status()).isEqualTo(200);
    long waited = Long.parseLong(r.header("x-sluice-queue-wait-ms").orElseThrow());
    assertThat(waited).isGreaterThanOrEqualTo(1);
    assertThat(num(sluiceMetadata(r), "queue_wait_ms")).isEqualTo((double) waited);
    assertThat(SluiceEnvoyHarness.result(first).header("x-sluice-queue-wait-ms")).isEmpty();
    h.awaitNothingInFlight();
  }
}
