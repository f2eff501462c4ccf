package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.emulator.Route;
import io.sluice.emulator.RouteTable;
import io.sluice.envoyconfig.LocalReplyMappers;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Typed upstream failures (docs/envoy.md, "Typed upstream failures"): an upstream 429 with {@code
 * retry-after: 7}, a 503, a 529, a reset and a timeout each reach the client in Sluice's typed
 * shape, with a Retry-After at least the upstream's. The 429/503/529 rows go through Sluice (an
 * ImmediateResponse at the response headers); a reset or a route timeout is Envoy's own local
 * reply, which no ext_proc server sees (Envoy 1.34+, and the emulator): the emulator shows Sluice's
 * permit released once and the local reply, and the shipped {@code local_reply_config} (its mappers
 * applied as Envoy applies them, {@link LocalReplyMappers}) types it. Each request was admitted and
 * ran: released once, counted by status and kind.
 */
@Timeout(30)
class UpstreamFailuresE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Path ENVOY_YAML =
      Path.of(System.getProperty("user.dir")).resolve("../envoy-config/envoy.yaml").normalize();

  private SluiceEnvoyHarness h;
  private final Scripted upstream = new Scripted();

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  /** An upstream whose next answer the test sets. */
  static final class Scripted implements Upstream {
    volatile Supplier<CompletableFuture<UpstreamResponse>> next;

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      return next.get();
    }

    void answer(int status, String body, String... headers) {
      next =
          () ->
              CompletableFuture.completedFuture(
                  UpstreamResponse.of(status, HttpHeaders.of(headers), body));
    }
  }

  private void start(Policy policy) {
    h =
        SluiceEnvoyHarness.start(
            policy, SluiceEnvoyHarness.recommendedFilter().build(), upstream, null, null);
  }

  /** The typed answer as the client sees it; returns its JSON error. */
  static JsonNode assertTyped(HttpResult r, int status, String reason, int upstreamStatus)
      throws IOException {
    assertThat(r.status()).isEqualTo(status);
    assertThat(r.header("x-sluice-reason")).contains(reason);
    assertThat(r.header("content-type")).contains("application/json");
    JsonNode error = JSON.readTree(r.body()).path("error");
    assertThat(error.path("code").asText()).isEqualTo(reason);
    assertThat(error.path("scope").asText()).isEqualTo("upstream");
    assertThat(error.path("retryable").asBoolean()).isTrue();
    assertThat(error.path("upstream_status").asInt()).isEqualTo(upstreamStatus);
    long retryAfter = Long.parseLong(r.header("retry-after").orElseThrow());
    assertThat(retryAfter).isGreaterThanOrEqualTo(1);
    assertThat(error.path("retry_after_seconds").asLong()).isEqualTo(retryAfter);
    return error;
  }

  /** {@code sluice_upstream_failures_total} of pool gpu, by kind and answer. */
  private double failures(String kind, String answer) {
    return h.counter("sluice.upstream.failures", "pool", "gpu", "kind", kind, "answer", answer);
  }

  /** Admitted, ran, released once as completed; the upstream's status counted once. */
  private void assertRanAndReleasedOnce(String statusLabel) {
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.counter("sluice.upstream.responses", "pool", "gpu", "status", statusLabel))
        .isEqualTo(1);
    assertThat(h.counter("sluice.decisions", "decision", "admit")).isEqualTo(1);
  }

  @Test
  void upstream429WithRetryAfter7_reachesTheClientTyped_retryAfterAtLeast7() throws Exception {
    start(Policy.base());
    upstream.answer(
        429,
        "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}",
        "content-type",
        "application/json",
        "retry-after",
        "7");

    HttpResult r = h.send(chat(chatBody(50, false)).build());

    assertThat(r.upstreamRequest()).as("admitted: the upstream saw it").isPresent();
    JsonNode error = assertTyped(r, 429, "upstream_rate_limited", 429);
    assertThat(error.path("type").asText()).isEqualTo("rate_limited");
    assertThat(Long.parseLong(r.header("retry-after").orElseThrow())).isGreaterThanOrEqualTo(7);
    assertThat(r.header("x-sluice-upstream-status")).contains("429");
    assertThat(r.responseCodeDetails()).isEqualTo("sluice_upstream_rate_limited");
    assertThat(str(sluiceMetadata(r), "upstream_error")).isEqualTo("upstream_rate_limited");
    assertThat(str(sluiceMetadata(r), "decision")).isEqualTo("admit");
    assertRanAndReleasedOnce("429");
    assertThat(failures("rate_limited", "typed")).isEqualTo(1);
  }

  @Test
  void upstream503_reachesTheClientTyped() throws Exception {
    start(Policy.base());
    upstream.answer(503, "upstream overloaded", "content-type", "text/plain");
    HttpResult r = h.send(chat(chatBody(50, true)).build());
    JsonNode error = assertTyped(r, 503, "upstream_unavailable", 503);
    assertThat(error.path("type").asText()).isEqualTo("overloaded");
    assertRanAndReleasedOnce("503");
  }

  @Test
  void upstream529_reachesTheClientTypedAs503Overloaded() throws Exception {
    start(Policy.base());
    upstream.answer(
        529,
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
        "content-type",
        "application/json",
        "retry-after",
        "3");
    HttpResult r = h.send(chat(chatBody(50, false)).build());
    assertTyped(r, 503, "upstream_overloaded", 529);
    assertThat(Long.parseLong(r.header("retry-after").orElseThrow())).isGreaterThanOrEqualTo(3);
    assertRanAndReleasedOnce("5xx");
  }

  @Test
  void upstreamReset_isEnvoysLocalReply_typedByTheShippedLocalReplyConfig() throws Exception {
    start(Policy.base());
    upstream.next = () -> CompletableFuture.failedFuture(new IOException("connection reset"));
    HttpResult r = h.send(chat(chatBody(50, false)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.responseCodeDetails()).startsWith("upstream_reset_before_response_started");
    assertThat(r.header("x-sluice-reason")).as("Sluice never saw the reply").isEmpty();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).as("the permit goes back once").isEqualTo(1);

    HttpResult typed = LocalReplyMappers.load(ENVOY_YAML).apply(r);
    assertTyped(typed, 503, "upstream_reset", 503);
  }

  @Test
  void routeTimeout_isEnvoysLocalReply_typedByTheShippedLocalReplyConfig() throws Exception {
    h =
        SluiceEnvoyHarness.startRouted(
            Policy.base(),
            SluiceEnvoyHarness.recommendedFilter().build(),
            u ->
                RouteTable.of(
                    Route.catchAll("chat", upstream).withTimeout(Duration.ofMillis(300))));
    upstream.next = CompletableFuture::new; // never answers
    HttpResult r = h.send(chat(chatBody(50, false)).build());

    assertThat(r.status()).isEqualTo(504);
    assertThat(r.responseCodeDetails()).isEqualTo("upstream_response_timeout");
    assertThat(r.header("x-sluice-reason")).isEmpty();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);

    HttpResult typed = LocalReplyMappers.load(ENVOY_YAML).apply(r);
    assertTyped(typed, 504, "upstream_timeout", 504);
  }

  /** A gRPC call (content-type application/grpc) to the chat route, as Envoy forwards one. */
  private static HttpRequest grpcChat() {
    return HttpRequest.builder()
        .method("POST")
        .path(SluiceEnvoyHarness.CHAT)
        .header("content-type", "application/grpc")
        .body(chatBody(50, false))
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .build();
  }

  /** A gRPC upstream's trailers-only failure: 200, {@code grpc-status} in the headers, no body. */
  private void grpcFailure(String grpcStatus, String... more) {
    String[] h = new String[4 + more.length];
    h[0] = "content-type";
    h[1] = "application/grpc";
    h[2] = "grpc-status";
    h[3] = grpcStatus;
    System.arraycopy(more, 0, h, 4, more.length);
    upstream.answer(200, "", h);
  }

  /**
   * A gRPC upstream's RESOURCE_EXHAUSTED (trailers-only, with {@code grpc-retry-pushback-ms}): the
   * client gets Envoy's trailers-only answer with Sluice's gRPC status, reason and a Retry-After at
   * least the pushback; the pool sees it as the 429 Envoy maps it to.
   */
  @Test
  void grpcResourceExhausted_trailersOnly_reachesTheGrpcClientTyped() throws Exception {
    start(Policy.base());
    grpcFailure("8", "grpc-message", "quota", "grpc-retry-pushback-ms", "6500");

    HttpResult r = h.send(grpcChat());

    assertThat(r.upstreamRequest()).as("admitted: the upstream saw it").isPresent();
    assertThat(r.status()).as("gRPC: trailers-only").isEqualTo(200);
    assertThat(r.header("grpc-status")).contains("8");
    assertThat(r.header("x-sluice-reason")).contains("upstream_rate_limited");
    assertThat(r.header("x-sluice-upstream-grpc-status")).contains("8");
    assertThat(Long.parseLong(r.header("retry-after").orElseThrow())).isGreaterThanOrEqualTo(7);
    assertThat(r.header("grpc-message").orElseThrow()).contains("upstream_rate_limited");
    assertThat(r.responseCodeDetails()).isEqualTo("sluice_upstream_rate_limited");
    assertRanAndReleasedOnce("429");
    assertThat(failures("rate_limited", "typed")).isEqualTo(1);
  }

  @Test
  void grpcUnavailableAndDeadlineExceeded_typedWithTheirHttpKinds() throws Exception {
    start(Policy.base());
    grpcFailure("14", "retry-after", "3");
    HttpResult unavailable = h.send(grpcChat());
    assertThat(unavailable.header("grpc-status")).contains("14");
    assertThat(unavailable.header("x-sluice-reason")).contains("upstream_unavailable");
    assertThat(Long.parseLong(unavailable.header("retry-after").orElseThrow()))
        .isGreaterThanOrEqualTo(3);

    grpcFailure("4");
    HttpResult deadline = h.send(grpcChat());
    assertThat(deadline.header("grpc-status")).contains("4");
    assertThat(deadline.header("x-sluice-reason")).contains("upstream_timeout");
    h.awaitNothingInFlight();
    assertThat(h.counter("sluice.upstream.responses", "pool", "gpu", "status", "503")).isEqualTo(1);
  }

  /** A gRPC upstream's 200 and one message, its status in the trailers that follow. */
  private void grpcAnswerWithTrailers(String... trailers) {
    upstream.next =
        () ->
            CompletableFuture.completedFuture(
                UpstreamResponse.withTrailers(
                    200,
                    HttpHeaders.of("content-type", "application/grpc"),
                    "\0\0\0\0\0",
                    HttpHeaders.of(trailers)));
  }

  /**
   * A gRPC upstream's UNAVAILABLE in its trailers, after its 200 and a message, through the
   * emulated Envoy with {@code response_trailer_mode: SEND}: the 200 and the message reach the
   * client as sent, and the trailers it receives carry the upstream's {@code grpc-status} with
   * Sluice's reason, {@code x-sluice-upstream-grpc-status} and a Retry-After at least the pushback;
   * released once, counted {@code annotated}.
   */
  @Test
  void grpcUnavailableInTrailers_throughEnvoyWithTrailersSent_reachesTheClientTyped()
      throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base(),
            SluiceEnvoyHarness.recommendedFilter()
                .responseTrailerMode(FilterConfig.HeaderMode.SEND)
                .build(),
            upstream,
            null,
            null);
    grpcAnswerWithTrailers(
        "grpc-status", "14", "grpc-message", "busy", "grpc-retry-pushback-ms", "4200");

    HttpResult r = h.send(grpcChat());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.body()).hasSize(5);
    assertThat(r.header("x-sluice-reason")).as("the headers went as the upstream sent").isEmpty();
    assertThat(r.trailer("grpc-status")).contains("14");
    assertThat(r.trailer("grpc-message")).contains("busy");
    assertThat(r.trailer("x-sluice-reason")).contains("upstream_unavailable");
    assertThat(r.trailer("x-sluice-upstream-grpc-status")).contains("14");
    assertThat(r.trailer("x-sluice-upstream-status")).contains("503");
    assertThat(Long.parseLong(r.trailer("retry-after").orElseThrow())).isGreaterThanOrEqualTo(5);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(failures("unavailable", "annotated")).isEqualTo(1);
  }

  /**
   * The same answer through an Envoy that skips response trailers (the default mode): Sluice never
   * sees them, the client gets them as the upstream sent them, the permit goes back once.
   */
  @Test
  void grpcStatusInTrailers_trailersSkipped_reachTheClientUntouched() throws Exception {
    start(Policy.base());
    grpcAnswerWithTrailers("grpc-status", "14", "grpc-message", "busy");

    HttpResult r = h.send(grpcChat());

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.trailer("grpc-status")).contains("14");
    assertThat(r.trailer("x-sluice-reason")).isEmpty();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(failures("unavailable", "annotated")).isZero();
  }

  @Test
  void grpcOkAndOtherStatuses_passUntouched() throws Exception {
    start(Policy.base());
    grpcFailure("5", "grpc-message", "not found");
    HttpResult r = h.send(grpcChat());
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("grpc-status")).contains("5");
    assertThat(r.header("x-sluice-reason")).isEmpty();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void keepProviderBody_keepsTheProvidersStatusAndBody_addsSluicesHeaders() throws Exception {
    start(Policy.base().with("upstreamErrors", "{keepProviderBody: true, retryAfter: 2s}"));
    String provider = "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}";
    upstream.answer(429, provider, "content-type", "application/json", "retry-after", "1");
    HttpResult r = h.send(chat(chatBody(50, false)).build());
    assertThat(r.status()).isEqualTo(429);
    assertThat(r.bodyUtf8()).isEqualTo(provider);
    assertThat(r.header("x-sluice-reason")).contains("upstream_rate_limited");
    assertThat(r.header("retry-after")).contains("2"); // at least upstreamErrors.retryAfter
    assertRanAndReleasedOnce("429");
    assertThat(failures("rate_limited", "annotated")).isEqualTo(1);
  }

  @Test
  void rewriteOffForARoute_passesTheUpstreamsAnswerUntouched_stillCounted() throws Exception {
    start(Policy.base().with("upstreamErrors", "{routes: {chat: {rewrite: false}}}"));
    upstream.answer(503, "busy", "content-type", "text/plain", "retry-after", "4");
    HttpResult r = h.send(chat(chatBody(50, false)).build());
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.bodyUtf8()).isEqualTo("busy");
    assertThat(r.header("x-sluice-reason")).isEmpty();
    assertThat(r.header("retry-after")).contains("4");
    assertRanAndReleasedOnce("503");
    assertThat(failures("unavailable", "passed")).isEqualTo(1);
  }
}
