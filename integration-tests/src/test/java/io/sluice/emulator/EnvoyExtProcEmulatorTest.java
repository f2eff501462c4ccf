package io.sluice.emulator;

import static io.sluice.emulator.ScriptedExtProcServer.continueEverything;
import static io.sluice.emulator.ScriptedExtProcServer.continueRequestHeaders;
import static io.sluice.emulator.ScriptedExtProcServer.overrideTimeout;
import static io.sluice.emulator.ScriptedExtProcServer.setHeaders;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.envoyproxy.envoy.type.v3.StatusCode;
import io.grpc.Status;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.emulator.ScriptedExtProcServer.End;
import io.sluice.emulator.ScriptedExtProcServer.Script;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class EnvoyExtProcEmulatorTest {
  private static final String CHAT = "{\"model\":\"m\",\"messages\":[]}";

  private final List<UpstreamRequest> upstreamSeen = new CopyOnWriteArrayList<>();
  private final Upstream okUpstream =
      req -> {
        upstreamSeen.add(req);
        return CompletableFuture.completedFuture(
            UpstreamResponse.of(
                200,
                HttpHeaders.of("content-type", "application/json", "content-length", "11"),
                "{\"ok\":true}"));
      };

  private ScriptedExtProcServer server;
  private EnvoyExtProcEmulator envoy;

  @AfterEach
  void tearDown() throws Exception {
    if (envoy != null) {
      envoy.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private EnvoyExtProcEmulator start(Script script, FilterConfig config) throws Exception {
    return start(script, config, okUpstream);
  }

  private EnvoyExtProcEmulator start(Script script, FilterConfig config, Upstream upstream)
      throws Exception {
    server = new ScriptedExtProcServer(script);
    envoy = EnvoyExtProcEmulator.connect(server.target(), config, upstream);
    return envoy;
  }

  /** Emulator timers, the script's delayed replies and result durations on one virtual clock. */
  private final VirtualScheduler clock = new VirtualScheduler();

  private EnvoyExtProcEmulator startOnVirtualClock(Script script, FilterConfig config)
      throws Exception {
    server = new ScriptedExtProcServer(script, clock);
    envoy =
        EnvoyExtProcEmulator.connect(server.target(), config, okUpstream, clock, clock::nanoTime);
    return envoy;
  }

  /** The result, once the exchange has ended (bounded wait: the exchange is driven by events). */
  private static HttpResult result(CompletableFuture<HttpResult> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  private static FilterConfig requestHeadersOnly() {
    return relaxed().toBuilder().responseHeaderMode(FilterConfig.HeaderMode.SKIP).build();
  }

  /** Envoy defaults but a 2 s message timeout, for tests where the timer is not the subject. */
  private static FilterConfig relaxed() {
    return FilterConfig.builder().messageTimeout(Duration.ofSeconds(2)).build();
  }

  @BeforeAll
  static void warmUp() throws Exception {
    try (ScriptedExtProcServer warm =
            new ScriptedExtProcServer(ScriptedExtProcServer::continueEverything);
        EnvoyExtProcEmulator emulator =
            EnvoyExtProcEmulator.connect(
                warm.target(),
                relaxed().toBuilder().responseBodyMode(BodyMode.STREAMED).build(),
                req ->
                    CompletableFuture.completedFuture(
                        UpstreamResponse.of(200, HttpHeaders.of(), "warm")))) {
      for (int i = 0; i < 20; i++) {
        emulator.send(HttpRequest.post("/warm", CHAT).build());
      }
    }
  }

  private static Map<String, String> headerMap(ProcessingRequest message) {
    List<HeaderValue> list =
        message.hasRequestHeaders()
            ? message.getRequestHeaders().getHeaders().getHeadersList()
            : message.getResponseHeaders().getHeaders().getHeadersList();
    return list.stream()
        .collect(
            Collectors.toMap(
                HeaderValue::getKey, h -> h.getRawValue().toStringUtf8(), (a, b) -> a + "," + b));
  }

  private static End awaitEnd(ScriptedExtProcServer.ServerStream stream) throws Exception {
    return stream.end.get(5, TimeUnit.SECONDS);
  }

  @Test
  void continuePath_defaultModes_forwardsMutatedRequestAndResetsStream() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            stream.reply(continueRequestHeaders(setHeaders("x-admission", "admitted")));
          } else {
            continueEverything(stream, msg);
          }
        };
    FilterConfig config =
        relaxed().toBuilder()
            .grpcAuthority("sluice-cluster")
            .grpcInitialMetadata("x-admission-class", "standard")
            .grpcInitialMetadata("x-listener", "public")
            .requestAttribute("xds.route_name", "chat")
            .requestAttribute("request.size", 27)
            .forwardingNamespaces("envoy.filters.http.jwt_authn")
            .build();
    start(script, config);

    HttpResult result =
        envoy.send(
            HttpRequest.post("/v1/chat/completions", CHAT)
                .header("X-Tenant", "acme")
                .requestId("rid-1")
                .routeGrpcInitialMetadata("x-admission-class", "premium")
                .streamMetadata(
                    "envoy.filters.http.jwt_authn",
                    Struct.newBuilder()
                        .putFields("sub", Value.newBuilder().setStringValue("alice").build())
                        .build())
                .streamMetadata("not.forwarded", Struct.getDefaultInstance())
                .build());

    assertThat(result.outcome()).isEqualTo(Outcome.UPSTREAM_RESPONSE);
    assertThat(result.status()).isEqualTo(200);
    assertThat(result.responseCodeDetails()).isEqualTo("via_upstream");
    assertThat(result.bodyUtf8()).isEqualTo("{\"ok\":true}");
    assertThat(result.extProcBypassed()).isFalse();
    UpstreamRequest seen = result.upstreamRequest().orElseThrow();
    assertThat(seen.headers().first("x-admission")).contains("admitted");
    assertThat(seen.headers().first("content-length")).contains("27");
    assertThat(seen.bodyUtf8()).isEqualTo(CHAT);

    ScriptedExtProcServer.ServerStream stream = server.onlyStream();
    assertThat(awaitEnd(stream)).isEqualTo(End.CANCELLED);
    assertThat(stream.authority).isEqualTo("sluice-cluster");
    assertThat(stream.header("x-admission-class")).isEqualTo("premium");
    assertThat(stream.header("x-listener")).isEqualTo("public");
    assertThat(stream.received).hasSize(2);
    ProcessingRequest first = stream.received.get(0);
    assertThat(first.hasRequestHeaders()).isTrue();
    assertThat(first.getRequestHeaders().getEndOfStream()).isFalse();
    assertThat(first.getRequestHeaders().getHeaders().getHeadersList())
        .allSatisfy(h -> assertThat(h.getValue()).isEmpty());
    assertThat(headerMap(first))
        .containsEntry(":method", "POST")
        .containsEntry(":path", "/v1/chat/completions")
        .containsEntry(":authority", "llm.example")
        .containsEntry(":scheme", "http")
        .containsEntry("x-tenant", "acme")
        .containsEntry("x-request-id", "rid-1")
        .containsEntry("content-length", "27");
    Struct attributes = first.getAttributesOrThrow("envoy.filters.http.ext_proc");
    assertThat(attributes.getFieldsOrThrow("xds.route_name").getStringValue()).isEqualTo("chat");
    assertThat(attributes.getFieldsOrThrow("request.size").getNumberValue()).isEqualTo(27.0);
    assertThat(first.getMetadataContext().getFilterMetadataMap())
        .containsOnlyKeys("envoy.filters.http.jwt_authn");
    assertThat(first.hasProtocolConfig()).isTrue();
    assertThat(first.getProtocolConfig().getRequestBodyMode())
        .isEqualTo(ProcessingMode.BodySendMode.NONE);
    ProcessingRequest second = stream.received.get(1);
    assertThat(second.hasResponseHeaders()).isTrue();
    assertThat(headerMap(second)).containsEntry(":status", "200");
    assertThat(second.getAttributesMap()).isEmpty();
    assertThat(second.hasProtocolConfig()).isFalse();
    assertThat(second.hasMetadataContext()).isTrue();

    assertThat(envoy.stats().snapshot())
        .containsEntry("streams_started", 1L)
        .containsEntry("stream_msgs_sent", 2L)
        .containsEntry("stream_msgs_received", 2L)
        .containsEntry("streams_closed", 1L)
        .containsEntry("streams_failed", 0L);
  }

  @Test
  void immediateResponse_429WithJsonBody_rendersLocalReplyWithoutUpstream() throws Exception {
    String json = "{\"error\":{\"type\":\"rate_limit_exceeded\"}}";
    Script script =
        (stream, msg) ->
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setImmediateResponse(
                        ImmediateResponse.newBuilder()
                            .setStatus(HttpStatus.newBuilder().setCode(StatusCode.TooManyRequests))
                            .setHeaders(
                                setHeaders(
                                    "retry-after", "3",
                                    "content-type", "application/json",
                                    "x-envoy-ratelimited", "true"))
                            .setBody(ByteString.copyFromUtf8(json))
                            .setDetails("sluice rejected: queue full"))
                    .build());
    start(script, relaxed());

    HttpResult result = envoy.send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.outcome()).isEqualTo(Outcome.LOCAL_REPLY);
    assertThat(result.status()).isEqualTo(429);
    assertThat(result.header("retry-after")).contains("3");
    assertThat(result.header("content-type")).contains("application/json");
    assertThat(result.header("x-envoy-ratelimited")).isEmpty();
    assertThat(result.bodyUtf8()).isEqualTo(json);
    assertThat(result.responseCodeDetails()).isEqualTo("sluice_rejected:_queue_full");
    assertThat(result.upstreamRequest()).isEmpty();
    assertThat(upstreamSeen).isEmpty();
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
    assertThat(envoy.stats().immediateResponsesSent()).isEqualTo(1);
    assertThat(envoy.stats().rejectedHeaderMutations()).isEqualTo(1);
  }

  @Test
  void immediateResponse_statusUnsetAndPlainBody_defaultsTo200TextPlain() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setImmediateResponse(
                        ImmediateResponse.newBuilder()
                            .setStatus(HttpStatus.newBuilder().setCodeValue(100))
                            .setBody(ByteString.copyFromUtf8("hello")))
                    .build());
    start(script, relaxed());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.header("content-type")).contains("text/plain");
    assertThat(result.bodyUtf8()).isEqualTo("hello");
  }

  @Test
  void messageTimeout_failClosed_504() throws Exception {
    startOnVirtualClock((stream, msg) -> {}, FilterConfig.builder().build());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    awaitReceived(1);
    clock.advance(Duration.ofMillis(199));
    assertThat(f).as("the 200 ms message timer has not fired").isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(504);
    assertThat(result.responseCodeDetails())
        .isEqualTo("ext_proc_error_per-message_timeout_exceeded");
    assertThat(result.total()).isEqualTo(Duration.ofMillis(200)); // virtual time
    assertThat(upstreamSeen).isEmpty();
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
    assertThat(envoy.stats().messageTimeouts()).isEqualTo(1);
  }

  @Test
  void messageTimeout_failureModeAllow_continuesUnprocessed() throws Exception {
    startOnVirtualClock(
        (stream, msg) -> {},
        FilterConfig.builder()
            .failureModeAllow(true)
            .messageTimeout(Duration.ofMillis(50))
            .build());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    awaitReceived(1);
    clock.advance(Duration.ofMillis(50));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.extProcBypassed()).isTrue();
    assertThat(result.upstreamRequest()).isPresent();
    assertThat(server.onlyStream().received).hasSize(1); // response headers not sent any more
    assertThat(envoy.stats().messageTimeouts()).isEqualTo(1);
    assertThat(envoy.stats().failureModeAllowed()).isEqualTo(1);
  }

  /** Waits (bounded) until the scripted server has received {@code n} messages on one stream. */
  private void awaitReceived(int n) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(5))
        .until(() -> server.streams.size() == 1 && server.onlyStream().received.size() == n);
  }

  /** Waits (bounded) until a counter of the emulator reads 1: an event, not a duration. */
  private static void awaitStat(java.util.function.LongSupplier stat) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(5))
        .until(() -> stat.getAsLong() == 1);
  }

  private static FilterConfig holdConfig() {
    return FilterConfig.builder()
        .messageTimeout(Duration.ofMillis(200))
        .maxMessageTimeout(Duration.ofSeconds(1))
        .responseHeaderMode(FilterConfig.HeaderMode.SKIP)
        .build();
  }

  // The timer tests below run on the virtual clock: the script schedules its delayed reply before
  // it sends the override, so once the emulator has counted the override, every timer is in place
  // and advancing the clock decides which fires first (never the wall clock).

  @Test
  void override_inRange_holdsBeyondMessageTimeout() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.replyAfter(Duration.ofMillis(600), continueRequestHeaders());
          stream.reply(overrideTimeout(Duration.ofSeconds(1)));
        };
    startOnVirtualClock(script, holdConfig());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutReceived());
    clock.advance(Duration.ofMillis(599)); // past the 200 ms message timeout: held by the override
    assertThat(f).isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(600));
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isEqualTo(1);
    assertThat(envoy.stats().messageTimeouts()).isZero();
  }

  @Test
  void override_aboveMaxMessageTimeout_ignoredAndTimerFires() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.replyAfter(Duration.ofMillis(600), continueRequestHeaders());
          stream.reply(overrideTimeout(Duration.ofMillis(1001)));
        };
    startOnVirtualClock(script, holdConfig());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutIgnored());
    clock.advance(Duration.ofMillis(200)); // the original timer fires; the 600 ms reply never runs
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(504);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(200));
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isEqualTo(1);
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isZero();
  }

  @Test
  void override_subMillisecond_truncatesToZeroAndIsIgnored() throws Exception {
    Script script = (stream, msg) -> stream.reply(overrideTimeout(Duration.ofNanos(999_999)));
    start(script, holdConfig());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(504);
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isEqualTo(1);
  }

  @Test
  void override_maxMessageTimeoutZero_featureDisabled() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.replyAfter(Duration.ofMillis(400), continueRequestHeaders());
          stream.reply(overrideTimeout(Duration.ofMillis(500)));
        };
    startOnVirtualClock(
        script, requestHeadersOnly().toBuilder().messageTimeout(Duration.ofMillis(200)).build());

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.get("/").build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutIgnored());
    clock.advance(Duration.ofMillis(200)); // the 400 ms continue never runs
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(504);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(200));
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isEqualTo(1);
  }

  @Test
  void override_secondForSameMessage_ignoredTimerKeepsFirst() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.replyAfter(Duration.ofMillis(100), overrideTimeout(Duration.ofSeconds(1)));
          stream.replyAfter(Duration.ofMillis(600), continueRequestHeaders());
          stream.reply(overrideTimeout(Duration.ofMillis(300)));
        };
    startOnVirtualClock(script, holdConfig());

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.get("/").build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutReceived());
    clock.advance(Duration.ofMillis(100)); // the second override goes out
    awaitStat(() -> envoy.stats().overrideMessageTimeoutIgnored());
    clock.advance(Duration.ofMillis(199));
    assertThat(f).as("the first override's 300 ms still runs").isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(504);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(300));
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isEqualTo(1);
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isEqualTo(1);
  }

  @Test
  void override_newMessage_getsFreshOverride() throws Exception {
    // headers and buffered body each allow one override
    Script script =
        (stream, msg) -> {
          ProcessingResponse answer =
              msg.hasRequestHeaders()
                  ? continueRequestHeaders()
                  : ScriptedExtProcServer.continueRequestBody();
          stream.replyAfter(Duration.ofMillis(300), answer);
          stream.reply(overrideTimeout(Duration.ofMillis(500)));
        };
    startOnVirtualClock(
        script, holdConfig().toBuilder().requestBodyMode(BodyMode.BUFFERED).build());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutReceived());
    clock.advance(Duration.ofMillis(300)); // headers answered; the body message goes out
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> envoy.stats().overrideMessageTimeoutReceived() == 2);
    clock.advance(Duration.ofMillis(300)); // 300 ms into the body's fresh 500 ms override
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(600));
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isEqualTo(2);
  }

  @Test
  void override_bundledWithResponse_restOfMessageIgnored() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.replyAfter(Duration.ofMillis(250), continueRequestHeaders());
          stream.reply(
              continueRequestHeaders(setHeaders("x-bundled", "yes")).toBuilder()
                  .setOverrideMessageTimeout(
                      com.google.protobuf.Duration.newBuilder().setNanos(400_000_000))
                  .build());
        };
    startOnVirtualClock(script, holdConfig());

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.get("/").build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutReceived());
    clock.advance(Duration.ofMillis(249));
    assertThat(f).as("the bundled continue was not taken").isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.upstreamRequest().orElseThrow().headers().contains("x-bundled")).isFalse();
    assertThat(result.total()).isEqualTo(Duration.ofMillis(250));
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isEqualTo(1);
    assertThat(envoy.stats().streamMsgsReceived()).isEqualTo(1);
  }

  @Test
  void serverClosesOkBeforeAnswering_continuesEvenWhenFailClosed() throws Exception {
    start((stream, msg) -> stream.closeOk(), relaxed());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.responseCodeDetails()).isEqualTo("via_upstream");
    assertThat(result.extProcBypassed()).isTrue();
    assertThat(server.onlyStream().received).hasSize(1);
    assertThat(envoy.stats().streamsClosed()).isEqualTo(1);
    assertThat(envoy.stats().streamsFailed()).isZero();
  }

  @Test
  void serverClosesNonOk_failClosed_500WithGrpcDetails() throws Exception {
    start(
        (stream, msg) -> stream.closeWith(Status.INTERNAL.withDescription("boom now")), relaxed());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(500);
    assertThat(result.responseCodeDetails()).isEqualTo("ext_proc_error_gRPC_error_13{boom_now}");
    assertThat(upstreamSeen).isEmpty();
    assertThat(envoy.stats().streamsFailed()).isEqualTo(1);
  }

  @Test
  void serverClosesNonOk_failureModeAllow_continues() throws Exception {
    start(
        (stream, msg) -> stream.closeWith(Status.UNAVAILABLE),
        relaxed().toBuilder().failureModeAllow(true).build());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.extProcBypassed()).isTrue();
    assertThat(envoy.stats().streamsFailed()).isEqualTo(1);
    assertThat(envoy.stats().failureModeAllowed()).isEqualTo(1);
  }

  @Test
  void spuriousResponse_failClosed_500() throws Exception {
    start(
        (stream, msg) -> stream.reply(ScriptedExtProcServer.continueResponseHeaders()), relaxed());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(500);
    assertThat(result.responseCodeDetails()).isEqualTo("spurious_message");
    assertThat(envoy.stats().spuriousMsgsReceived()).isEqualTo(1);
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
  }

  @Test
  void spuriousResponse_noOneof_failureModeAllow_continues() throws Exception {
    Struct metadataOnly =
        Struct.newBuilder()
            .putFields(
                "sluice",
                Value.newBuilder()
                    .setStructValue(
                        Struct.newBuilder()
                            .putFields("class", Value.newBuilder().setStringValue("x").build()))
                    .build())
            .build();
    start(
        (stream, msg) ->
            stream.reply(ProcessingResponse.newBuilder().setDynamicMetadata(metadataOnly).build()),
        relaxed().toBuilder().failureModeAllow(true).receivingNamespaces("sluice").build());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.extProcBypassed()).isTrue();
    assertThat(result.dynamicMetadata().getFieldsMap()).isEmpty();
    assertThat(envoy.stats().spuriousMsgsReceived()).isEqualTo(1);
    assertThat(envoy.stats().failureModeAllowed()).isEqualTo(1);
  }

  @Test
  void dynamicMetadata_onlyReceivingNamespacesKept() throws Exception {
    Struct md =
        Struct.newBuilder()
            .putFields("sluice", structValue("tokens", "120"))
            .putFields("other", structValue("k", "v"))
            .build();
    Script script =
        (stream, msg) ->
            stream.reply(continueRequestHeaders().toBuilder().setDynamicMetadata(md).build());
    start(script, requestHeadersOnly().toBuilder().receivingNamespaces("sluice").build());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.dynamicMetadata().getFieldsMap()).containsOnlyKeys("sluice");
    assertThat(
            result
                .dynamicMetadata()
                .getFieldsOrThrow("sluice")
                .getStructValue()
                .getFieldsOrThrow("tokens")
                .getStringValue())
        .isEqualTo("120");
  }

  @Test
  void dynamicMetadata_noReceivingNamespaces_allDropped() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders().toBuilder()
                    .setDynamicMetadata(
                        Struct.newBuilder().putFields("sluice", structValue("tokens", "1")))
                    .build());
    start(script, requestHeadersOnly());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.dynamicMetadata().getFieldsMap()).isEmpty();
  }

  private static Value structValue(String key, String value) {
    return Value.newBuilder()
        .setStructValue(
            Struct.newBuilder().putFields(key, Value.newBuilder().setStringValue(value).build()))
        .build();
  }

  @Test
  void streamedResponse_oneMessagePerChunk_mutationsAppliedInOrder() throws Exception {
    Upstream sse =
        req ->
            CompletableFuture.completedFuture(
                new UpstreamResponse(
                    200,
                    HttpHeaders.of("content-type", "text/event-stream", "content-length", "99"),
                    delayedChunks(List.of("data: a\n\n", "data: b\n\n", "data: [DONE]\n\n"))));
    Script script =
        (stream, msg) -> {
          if (msg.hasResponseBody()) {
            String upper = msg.getResponseBody().getBody().toStringUtf8().toUpperCase();
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setResponseBody(
                        BodyResponse.newBuilder()
                            .setResponse(
                                CommonResponse.newBuilder()
                                    .setBodyMutation(
                                        BodyMutation.newBuilder()
                                            .setBody(ByteString.copyFromUtf8(upper)))))
                    .build());
          } else {
            continueEverything(stream, msg);
          }
        };
    start(script, relaxed().toBuilder().responseBodyMode(BodyMode.STREAMED).build(), sse);

    HttpResult result = envoy.send(HttpRequest.get("/v1/chat/completions").build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.header("content-length")).isEmpty();
    assertThat(result.bodyChunks())
        .extracting(c -> new String(c, StandardCharsets.UTF_8))
        .containsExactly("DATA: A\n\n", "DATA: B\n\n", "DATA: [DONE]\n\n");
    List<ProcessingRequest> bodies =
        server.onlyStream().received.stream().filter(ProcessingRequest::hasResponseBody).toList();
    assertThat(bodies).hasSize(3);
    assertThat(bodies)
        .extracting(m -> m.getResponseBody().getEndOfStream())
        .containsExactly(false, false, true);
    assertThat(result.timeToFirstByte()).isPresent();
  }

  /** An SSE answer: its first chunk at once, the rest when {@code finish} completes. */
  private static Upstream streamUntil(CompletableFuture<Void> finish) {
    return req ->
        CompletableFuture.completedFuture(
            new UpstreamResponse(
                200,
                HttpHeaders.of("content-type", "text/event-stream"),
                sink -> {
                  sink.onData("data: a\n\n".getBytes(StandardCharsets.UTF_8), false);
                  var unused =
                      finish.thenRun(
                          () ->
                              sink.onData(
                                  "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8), true));
                  return () -> {};
                }));
  }

  private ScriptedExtProcServer.ServerStream awaitOneStream() {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.streams.size() == 1);
    return server.onlyStream();
  }

  @Test
  void responseBodyNone_envoy137_closesTheStreamRightAfterTheResponseHeaders() throws Exception {
    CompletableFuture<Void> finish = new CompletableFuture<>();
    start( // response body NONE (Envoy's default), the 1.37 stream close optimization on
        ScriptedExtProcServer::continueEverything,
        relaxed().toBuilder().closeStreamAfterLastResponse(true).build(),
        streamUntil(finish));

    CompletableFuture<HttpResult> exchange =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    ScriptedExtProcServer.ServerStream stream = awaitOneStream();

    assertThat(awaitEnd(stream)).isEqualTo(End.CANCELLED); // at the first token
    assertThat(exchange).as("the answer is still streaming").isNotDone();
    assertThat(stream.received)
        .extracting(ProcessingRequest::getRequestCase)
        .containsExactly(
            ProcessingRequest.RequestCase.REQUEST_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS);
    assertThat(stream.received.get(0).getProtocolConfig().getResponseBodyMode())
        .isEqualTo(ProcessingMode.BodySendMode.NONE);
    assertThat(stream.received.get(1).getResponseHeaders().getEndOfStream()).isFalse();

    finish.complete(null);
    HttpResult result = result(exchange);
    assertThat(result.status()).isEqualTo(200);
    assertThat(result.bodyUtf8()).isEqualTo("data: a\n\ndata: [DONE]\n\n");
    assertThat(envoy.stats().snapshot()).containsEntry("streams_closed", 1L);
  }

  @Test
  void responseBodyNone_beforeEnvoy137_keepsTheStreamToTheRequestsEnd() throws Exception {
    CompletableFuture<Void> finish = new CompletableFuture<>();
    start(ScriptedExtProcServer::continueEverything, relaxed(), streamUntil(finish));

    CompletableFuture<HttpResult> exchange =
        envoy.sendAsync(HttpRequest.post("/v1/chat/completions", CHAT).build());
    ScriptedExtProcServer.ServerStream stream = awaitOneStream();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> stream.received.size() == 2); // the response headers were sent

    Thread.sleep(200); // the stream stays open while the answer streams
    assertThat(stream.end).isNotDone();
    finish.complete(null);
    assertThat(result(exchange).status()).isEqualTo(200);
    assertThat(awaitEnd(stream)).isEqualTo(End.CANCELLED); // the reset at the request's end
  }

  private static io.sluice.upstream.ResponseBody delayedChunks(List<String> chunks) {
    return sink -> {
      Thread t =
          new Thread(
              () -> {
                for (int i = 0; i < chunks.size(); i++) {
                  try {
                    Thread.sleep(20);
                  } catch (InterruptedException e) {
                    return;
                  }
                  sink.onData(
                      chunks.get(i).getBytes(StandardCharsets.UTF_8), i == chunks.size() - 1);
                }
              });
      t.start();
      return t::interrupt;
    };
  }

  @Test
  void immediateResponse_afterResponseHeadersWentDownstream_resetsDownstream() throws Exception {
    Upstream sse =
        req ->
            CompletableFuture.completedFuture(
                new UpstreamResponse(200, HttpHeaders.of(), delayedChunks(List.of("a", "b"))));
    Script script =
        (stream, msg) -> {
          if (msg.hasResponseBody()) {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setImmediateResponse(
                        ImmediateResponse.newBuilder()
                            .setStatus(HttpStatus.newBuilder().setCode(StatusCode.TooManyRequests)))
                    .build());
          } else {
            continueEverything(stream, msg);
          }
        };
    start(script, relaxed().toBuilder().responseBodyMode(BodyMode.STREAMED).build(), sse);

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.outcome()).isEqualTo(Outcome.DOWNSTREAM_RESET);
    assertThat(result.status()).isEqualTo(200);
  }

  @Test
  void bufferedRequestBody_wholeBodyAfterHeadersResponse_mutationReplacesBody() throws Exception {
    String replaced = "{\"model\":\"small\"}";
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestBody()) {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setRequestBody(
                        BodyResponse.newBuilder()
                            .setResponse(
                                CommonResponse.newBuilder()
                                    .setHeaderMutation(
                                        setHeaders(
                                            "content-length", Integer.toString(replaced.length())))
                                    .setBodyMutation(
                                        BodyMutation.newBuilder()
                                            .setBody(ByteString.copyFromUtf8(replaced)))))
                    .build());
          } else {
            continueEverything(stream, msg);
          }
        };
    start(script, requestHeadersOnly().toBuilder().requestBodyMode(BodyMode.BUFFERED).build());

    HttpResult result =
        envoy.send(
            HttpRequest.builder()
                .method("POST")
                .path("/v1/chat/completions")
                .bodyChunk("{\"model\":".getBytes(StandardCharsets.UTF_8))
                .bodyChunk("\"m\"}".getBytes(StandardCharsets.UTF_8))
                .build());

    assertThat(result.status()).isEqualTo(200);
    List<ProcessingRequest> received = server.onlyStream().received;
    assertThat(received).hasSize(2);
    assertThat(received.get(1).getRequestBody().getBody().toStringUtf8())
        .isEqualTo("{\"model\":\"m\"}");
    assertThat(received.get(1).getRequestBody().getEndOfStream()).isTrue();
    assertThat(received.get(1).hasProtocolConfig()).isFalse();
    UpstreamRequest seen = result.upstreamRequest().orElseThrow();
    assertThat(seen.bodyUtf8()).isEqualTo(replaced);
    assertThat(seen.headers().first("content-length")).contains("17");
  }

  @Test
  void streamedRequestBody_oneMessagePerChunk_pipelinedAndContentLengthRemoved() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestBody() && !msg.getRequestBody().getEndOfStream()) {
            // answer only once the last chunk arrived: proves the chunks are pipelined
            return;
          }
          if (msg.hasRequestBody()) {
            for (int i = 0; i < 2; i++) {
              stream.reply(
                  ProcessingResponse.newBuilder()
                      .setRequestBody(
                          BodyResponse.newBuilder()
                              .setResponse(
                                  CommonResponse.newBuilder()
                                      .setBodyMutation(
                                          BodyMutation.newBuilder()
                                              .setBody(ByteString.copyFromUtf8("<" + i + ">")))))
                      .build());
            }
          } else {
            continueEverything(stream, msg);
          }
        };
    start(script, requestHeadersOnly().toBuilder().requestBodyMode(BodyMode.STREAMED).build());

    HttpResult result =
        envoy.send(
            HttpRequest.builder()
                .method("POST")
                .bodyChunk("aaa".getBytes(StandardCharsets.UTF_8))
                .bodyChunk("bbb".getBytes(StandardCharsets.UTF_8))
                .build());

    assertThat(result.status()).isEqualTo(200);
    UpstreamRequest seen = result.upstreamRequest().orElseThrow();
    assertThat(seen.bodyUtf8()).isEqualTo("<0><1>");
    assertThat(seen.headers().contains("content-length")).isFalse();
    List<ProcessingRequest> received = server.onlyStream().received;
    assertThat(headerMap(received.get(0))).containsEntry("content-length", "6");
    assertThat(received.subList(1, 3))
        .extracting(m -> m.getRequestBody().getBody().toStringUtf8())
        .containsExactly("aaa", "bbb");
  }

  @Test
  void bufferedRequestBody_contentLengthMismatch_500() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestBody()) {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setRequestBody(
                        BodyResponse.newBuilder()
                            .setResponse(
                                CommonResponse.newBuilder()
                                    .setBodyMutation(
                                        BodyMutation.newBuilder()
                                            .setBody(ByteString.copyFromUtf8("{}")))))
                    .build());
          } else {
            continueEverything(stream, msg);
          }
        };
    start(script, requestHeadersOnly().toBuilder().requestBodyMode(BodyMode.BUFFERED).build());

    HttpResult result = envoy.send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.status()).isEqualTo(500);
    assertThat(upstreamSeen).isEmpty();
  }

  @Test
  void clientCancel_afterRequestHeadersSent_noUpstreamNoResponse() throws Exception {
    start((stream, msg) -> {}, holdConfig());

    HttpResult result =
        envoy.send(
            HttpRequest.get("/").cancelAfter(HttpRequest.Phase.REQUEST_HEADERS_SENT).build());

    assertThat(result.outcome()).isEqualTo(Outcome.CLIENT_CANCELLED);
    assertThat(result.status()).isZero();
    assertThat(result.responseCodeDetails()).isEqualTo("downstream_remote_disconnect");
    assertThat(upstreamSeen).isEmpty();
    assertThat(envoy.stats().streamsClosed()).isEqualTo(1);
  }

  @Test
  void clientCancel_whileResponseHeadersHeld_serverSeesCancelled() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            stream.reply(continueRequestHeaders());
          }
        };
    start(script, relaxed());

    HttpResult result =
        envoy.send(
            HttpRequest.get("/").cancelAfter(HttpRequest.Phase.RESPONSE_HEADERS_SENT).build());

    assertThat(result.outcome()).isEqualTo(Outcome.CLIENT_CANCELLED);
    assertThat(result.upstreamRequest()).isPresent();
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
  }

  @Test
  void clientCancel_afterDelay_serverSeesCancelled() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.reply(overrideTimeout(Duration.ofSeconds(1)));
        };
    startOnVirtualClock(script, holdConfig());

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(HttpRequest.get("/").cancelAfter(Duration.ofMillis(100)).build());
    awaitStat(() -> envoy.stats().overrideMessageTimeoutReceived()); // held for 1 s
    clock.advance(Duration.ofMillis(100)); // the client gives up first
    HttpResult result = result(f);

    assertThat(result.outcome()).isEqualTo(Outcome.CLIENT_CANCELLED);
    assertThat(result.total()).isEqualTo(Duration.ofMillis(100));
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
  }

  @Test
  void gracefulClose_halfClosesThenServerCompletes() throws Exception {
    Script script =
        (stream, msg) -> {
          stream.reply(continueRequestHeaders());
        };
    start(script, requestHeadersOnly().toBuilder().gracefulClose(true).build());

    HttpResult result = envoy.send(HttpRequest.get("/").build());

    assertThat(result.status()).isEqualTo(200);
    ScriptedExtProcServer.ServerStream stream = server.onlyStream();
    assertThat(awaitEnd(stream)).isEqualTo(End.HALF_CLOSED_BY_CLIENT);
    stream.closeOk();
  }

  @Test
  void routeDisabled_noStreamOpened() throws Exception {
    start((stream, msg) -> {}, relaxed());

    HttpResult result = envoy.send(HttpRequest.get("/").routeDisabled(true).build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.extProcBypassed()).isFalse();
    assertThat(server.streams).isEmpty();
    assertThat(envoy.stats().streamsStarted()).isZero();
  }

  @Test
  void headersResponse_cannotChangeMethodOrEnvoyHeaders_butCanChangePath() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders(
                    setHeaders(":method", "DELETE", "x-envoy-foo", "1", ":path", "/v2")));
    start(script, requestHeadersOnly());

    HttpResult result = envoy.send(HttpRequest.get("/v1").build());

    HttpHeaders seen = result.upstreamRequest().orElseThrow().headers();
    assertThat(seen.first(":method")).contains("GET");
    assertThat(seen.first(":path")).contains("/v2");
    assertThat(seen.contains("x-envoy-foo")).isFalse();
    assertThat(envoy.stats().rejectedHeaderMutations()).isEqualTo(2);
  }

  @Test
  void manyConcurrentRequests_allComplete() throws Exception {
    // on a clock that never moves: no message timer can fire however slow the machine is
    startOnVirtualClock(ScriptedExtProcServer::continueEverything, relaxed());

    List<CompletableFuture<HttpResult>> futures =
        java.util.stream.IntStream.range(0, 200)
            .mapToObj(i -> envoy.sendAsync(HttpRequest.get("/" + i).build()))
            .toList();

    for (CompletableFuture<HttpResult> f : futures) {
      assertThat(f.get(10, TimeUnit.SECONDS).status()).isEqualTo(200);
    }
    assertThat(envoy.stats().streamsStarted()).isEqualTo(200);
  }
}
