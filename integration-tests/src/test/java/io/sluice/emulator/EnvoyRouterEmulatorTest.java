package io.sluice.emulator;

import static io.sluice.emulator.ScriptedExtProcServer.continueEverything;
import static io.sluice.emulator.ScriptedExtProcServer.continueRequestHeaders;
import static io.sluice.emulator.ScriptedExtProcServer.setHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.emulator.FilterConfig.RouteCacheAction;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.emulator.ScriptedExtProcServer.End;
import io.sluice.emulator.ScriptedExtProcServer.Script;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The emulated router and HCM around the ext_proc filter: {@code mutation_rules}, routes and the
 * route cache ({@code clear_route_cache}, {@code route_cache_action}), and the router's global
 * timeout with its request headers. Timeouts run on a {@link VirtualScheduler}: only the clock the
 * test moves decides when they fire.
 */
class EnvoyRouterEmulatorTest {
  private static final String CHAT = "{\"model\":\"m\",\"messages\":[]}";

  private VirtualScheduler clock = new VirtualScheduler();
  private final List<UpstreamRequest> smallSeen = new CopyOnWriteArrayList<>();
  private final List<UpstreamRequest> bigSeen = new CopyOnWriteArrayList<>();
  private final Upstream small = answering("small", smallSeen);
  private final Upstream big = answering("big", bigSeen);

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

  /** Ends this emulator and server (which shuts its clock down) for a second one in a test. */
  private void restart() throws Exception {
    tearDown();
    envoy = null;
    server = null;
    clock = new VirtualScheduler();
  }

  private static Upstream answering(String body, List<UpstreamRequest> seen) {
    return req -> {
      seen.add(req);
      return CompletableFuture.completedFuture(UpstreamResponse.of(200, HttpHeaders.of(), body));
    };
  }

  /** Emulator and scripted server on the virtual clock. */
  private EnvoyExtProcEmulator start(Script script, FilterConfig config, RouteTable routes)
      throws Exception {
    server = new ScriptedExtProcServer(script, clock);
    envoy = EnvoyExtProcEmulator.connect(server.target(), config, routes, clock, clock::nanoTime);
    return envoy;
  }

  /** Envoy defaults, request headers only, a 2 s message timeout (never reached here). */
  private static FilterConfig.Builder requestHeadersOnly() {
    return FilterConfig.builder()
        .messageTimeout(Duration.ofSeconds(2))
        .responseHeaderMode(HeaderMode.SKIP);
  }

  /** {@code x-model: big} ⇒ route "big", everything else ⇒ route "small". */
  private RouteTable modelRoutes() {
    return RouteTable.of(
        Route.header("big", "x-model", "big", big), Route.catchAll("small", small));
  }

  private static ProcessingResponse requestHeadersResponse(CommonResponse.Builder common) {
    return ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.newBuilder().setResponse(common))
        .build();
  }

  private static CommonResponse.Builder mutation(HeaderMutation m) {
    return CommonResponse.newBuilder().setHeaderMutation(m);
  }

  private static void await(BooleanSupplier condition) {
    Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(5))
        .until(condition::getAsBoolean);
  }

  private static HttpResult result(CompletableFuture<HttpResult> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  private static End awaitEnd(ScriptedExtProcServer.ServerStream stream) throws Exception {
    return stream.end.get(5, TimeUnit.SECONDS);
  }

  /** Runs one request to completion; nothing here waits on the clock. */
  private HttpResult send(HttpRequest request) throws Exception {
    CompletableFuture<HttpResult> f = envoy.sendAsync(request);
    await(
        () -> {
          clock.runDue();
          return f.isDone();
        });
    return result(f);
  }

  // --- mutation_rules -------------------------------------------------------------------------

  @Test
  void envoyHeaders_rejectedAndCountedByDefault() throws Exception {
    Script script =
        (stream, msg) -> {
          HeaderMutation m =
              setHeaders("x-envoy-upstream-rq-timeout-ms", "100", "x-admission", "ok").toBuilder()
                  .addRemoveHeaders("x-envoy-client-hint")
                  .build();
          stream.reply(continueRequestHeaders(m));
        };
    start(script, requestHeadersOnly().build(), RouteTable.single(small));

    HttpResult result =
        send(HttpRequest.get("/v1/models").header("x-envoy-client-hint", "kept").build());

    assertThat(result.status()).isEqualTo(200);
    HttpHeaders seen = result.upstreamRequest().orElseThrow().headers();
    assertThat(seen.first("x-admission")).contains("ok");
    assertThat(seen.first("x-envoy-client-hint")).contains("kept");
    assertThat(seen.contains("x-envoy-upstream-rq-timeout-ms")).isFalse();
    assertThat(result.routerTimeout()).contains(Duration.ZERO); // the route's (disabled) timeout
    assertThat(envoy.stats().rejectedHeaderMutations()).isEqualTo(2);
  }

  @Test
  void envoyHeaders_setAndRemovedWithAllowEnvoy() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders(
                    setHeaders("x-envoy-decision", "admitted").toBuilder()
                        .addRemoveHeaders("x-envoy-client-hint")
                        .build()));
    start(script, requestHeadersOnly().allowEnvoy(true).build(), RouteTable.single(small));

    HttpResult result =
        send(HttpRequest.get("/v1/models").header("x-envoy-client-hint", "dropped").build());

    HttpHeaders seen = result.upstreamRequest().orElseThrow().headers();
    assertThat(seen.first("x-envoy-decision")).contains("admitted");
    assertThat(seen.contains("x-envoy-client-hint")).isFalse();
    assertThat(envoy.stats().rejectedHeaderMutations()).isZero();
  }

  @Test
  void disallowIsError_aRejectedMutationIs500() throws Exception {
    Script script =
        (stream, msg) -> stream.reply(continueRequestHeaders(setHeaders("x-envoy-foo", "1")));
    start(script, requestHeadersOnly().disallowIsError(true).build(), RouteTable.single(small));

    HttpResult result = send(HttpRequest.get("/v1/models").build());

    assertThat(result.outcome()).isEqualTo(Outcome.LOCAL_REPLY);
    assertThat(result.status()).isEqualTo(500);
    assertThat(result.responseCodeDetails()).isEqualTo("Invalid_attempt_to_modify_x-envoy-foo");
    assertThat(result.upstreamRequest()).isEmpty();
    assertThat(smallSeen).isEmpty();
    assertThat(envoy.stats().rejectedHeaderMutations()).isEqualTo(1);
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
  }

  @Test
  void disallowIsError_removingAPseudoHeaderIs500() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders(
                    HeaderMutation.newBuilder().addRemoveHeaders(":path").build()));
    start(script, requestHeadersOnly().disallowIsError(true).build(), RouteTable.single(small));

    HttpResult result = send(HttpRequest.get("/v1/models").build());

    assertThat(result.status()).isEqualTo(500);
    assertThat(result.responseCodeDetails()).isEqualTo("Invalid_attempt_to_remove_:path");
  }

  @Test
  void allowAllRouting_authorityAndMethodMayBeSet_butPseudoHeadersStillNotRemoved()
      throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders(
                    setHeaders(":authority", "big.internal", ":method", "POST").toBuilder()
                        .addRemoveHeaders(":path")
                        .build()));
    start(script, requestHeadersOnly().allowAllRouting(true).build(), RouteTable.single(small));

    HttpResult result = send(HttpRequest.get("/v1/models").build());

    HttpHeaders seen = result.upstreamRequest().orElseThrow().headers();
    assertThat(seen.first(":authority")).contains("big.internal");
    assertThat(seen.first(":method")).contains("POST");
    assertThat(seen.first(":path")).contains("/v1/models");
    assertThat(envoy.stats().rejectedHeaderMutations()).isEqualTo(1);
  }

  // --- routes and the route cache -------------------------------------------------------------

  @Test
  void clearRouteCache_withHeaderMutation_routeIsPickedAgainFromTheMutatedHeaders()
      throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                requestHeadersResponse(
                    mutation(setHeaders("x-model", "big")).setClearRouteCache(true)));
    start(script, requestHeadersOnly().build(), modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.routeName()).contains("big");
    assertThat(result.bodyUtf8()).isEqualTo("big");
    assertThat(bigSeen).hasSize(1);
    assertThat(smallSeen).isEmpty();
    assertThat(result.routerTimeout()).contains(Route.DEFAULT_TIMEOUT);
    assertThat(envoy.stats().clearRouteCacheIgnored()).isZero();
    assertThat(envoy.stats().clearRouteCacheDisabled()).isZero();
  }

  @Test
  void headerMutationWithoutClear_keepsTheRoutePickedFromTheClientHeaders() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(requestHeadersResponse(mutation(setHeaders("x-model", "big"))));
    start(script, requestHeadersOnly().build(), modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.routeName()).contains("small");
    assertThat(smallSeen).hasSize(1);
    assertThat(smallSeen.get(0).headers().first("x-model")).contains("big");
    assertThat(bigSeen).isEmpty();
  }

  @Test
  void clearRouteCache_withoutHeaderMutation_ignoredAndCounted() throws Exception {
    // BUFFERED: the headers answer changes x-model but does not clear; the body answer asks to
    // clear without a header_mutation of its own, which Envoy ignores
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            stream.reply(requestHeadersResponse(mutation(setHeaders("x-model", "big"))));
          } else {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setRequestBody(
                        BodyResponse.newBuilder()
                            .setResponse(CommonResponse.newBuilder().setClearRouteCache(true)))
                    .build());
          }
        };
    start(script, requestHeadersOnly().requestBodyMode(BodyMode.BUFFERED).build(), modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.routeName()).contains("small");
    assertThat(bigSeen).isEmpty();
    assertThat(envoy.stats().clearRouteCacheIgnored()).isEqualTo(1);
    assertThat(envoy.stats().clearRouteCacheDisabled()).isZero();
  }

  @Test
  void bufferedBodyAnswer_withMutationAndClear_picksTheRouteAgain() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            stream.reply(continueRequestHeaders());
          } else {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setRequestBody(
                        BodyResponse.newBuilder()
                            .setResponse(
                                mutation(setHeaders("x-model", "big")).setClearRouteCache(true)))
                    .build());
          }
        };
    start(script, requestHeadersOnly().requestBodyMode(BodyMode.BUFFERED).build(), modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.routeName()).contains("big");
    assertThat(bigSeen).hasSize(1);
  }

  @Test
  void retainOrDisableClearRouteCache_neverClears_countsDisabled() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(
                requestHeadersResponse(
                    mutation(setHeaders("x-model", "big")).setClearRouteCache(true)));
    FilterConfig retain = requestHeadersOnly().routeCacheAction(RouteCacheAction.RETAIN).build();
    FilterConfig disabled = requestHeadersOnly().disableClearRouteCache(true).build();
    for (FilterConfig config : List.of(retain, disabled)) {
      restart();
      start(script, config, modelRoutes());

      HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

      assertThat(result.routeName()).as(config.toString()).contains("small");
      assertThat(envoy.stats().clearRouteCacheDisabled()).isEqualTo(1);
      assertThat(envoy.stats().clearRouteCacheIgnored()).isZero();
    }
    assertThat(bigSeen).isEmpty();
  }

  @Test
  void clearAction_clearsOnAnyHeaderMutation_evenWithoutTheFlag() throws Exception {
    Script script =
        (stream, msg) ->
            stream.reply(requestHeadersResponse(mutation(setHeaders("x-model", "big"))));
    start(
        script,
        requestHeadersOnly().routeCacheAction(RouteCacheAction.CLEAR).build(),
        modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.routeName()).contains("big");
  }

  @Test
  void routeCacheAction_andDisableClearRouteCache_together_refused() {
    assertThatThrownBy(
            () ->
                FilterConfig.builder()
                    .routeCacheAction(RouteCacheAction.CLEAR)
                    .disableClearRouteCache(true)
                    .build())
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void clearRouteCache_onTheResponsePath_neitherHonouredNorCounted() throws Exception {
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            stream.reply(continueRequestHeaders());
          } else {
            stream.reply(
                ProcessingResponse.newBuilder()
                    .setResponseHeaders(
                        HeadersResponse.newBuilder()
                            .setResponse(
                                mutation(setHeaders("x-model", "big")).setClearRouteCache(true)))
                    .build());
          }
        };
    // RETAIN would count clear_route_cache_disabled for a request-path answer
    FilterConfig config =
        FilterConfig.builder()
            .messageTimeout(Duration.ofSeconds(2))
            .routeCacheAction(RouteCacheAction.RETAIN)
            .build();
    start(script, config, modelRoutes());

    HttpResult result = send(HttpRequest.post("/v1/chat/completions", CHAT).build());

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.header("x-model")).contains("big"); // the mutation itself applied
    assertThat(result.routeName()).contains("small");
    assertThat(envoy.stats().clearRouteCacheDisabled()).isZero();
    assertThat(envoy.stats().clearRouteCacheIgnored()).isZero();
  }

  @Test
  void noRoute_404RouteNotFound_evenWhenAMutationWouldMatchUnlessTheCacheIsCleared()
      throws Exception {
    RouteTable onlyBig = RouteTable.of(Route.header("big", "x-model", "big", big));
    Script script =
        (stream, msg) ->
            stream.reply(
                requestHeadersResponse(
                    mutation(setHeaders("x-model", "big"))
                        .setClearRouteCache(
                            msg.getRequestHeaders().getHeaders().getHeadersList().stream()
                                .anyMatch(h -> h.getKey().equals("x-clear")))));
    start(script, requestHeadersOnly().build(), onlyBig);

    HttpResult cached = send(HttpRequest.get("/v1/models").build());
    HttpResult cleared = send(HttpRequest.get("/v1/models").header("x-clear", "1").build());

    assertThat(cached.outcome()).isEqualTo(Outcome.LOCAL_REPLY);
    assertThat(cached.status()).isEqualTo(404);
    assertThat(cached.responseCodeDetails()).isEqualTo("route_not_found");
    assertThat(cached.body()).isEmpty();
    assertThat(cached.routeName()).isEmpty();
    assertThat(cached.routerTimeout()).isEmpty();
    assertThat(cached.upstreamRequest()).isEmpty();
    assertThat(server.streams.get(0).received).hasSize(1); // ext_proc ran before the router
    assertThat(cleared.status()).isEqualTo(200);
    assertThat(cleared.routeName()).contains("big");
    assertThat(bigSeen).hasSize(1);
  }

  @Test
  void pathPrefixRoutes_firstMatchWins() throws Exception {
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.of(
            Route.pathPrefix("chat", "/v1/chat/", big),
            Route.pathPrefix("v1", "/v1/", small),
            Route.catchAll("never", small)));

    assertThat(send(HttpRequest.post("/v1/chat/completions", CHAT).build()).routeName())
        .contains("chat");
    assertThat(send(HttpRequest.get("/v1/models").build()).routeName()).contains("v1");
  }

  // --- router timeouts ------------------------------------------------------------------------

  @Test
  void expectedRqTimeout_isTheRouteTimeout_unlessSuppressedOrDisabled() throws Exception {
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.of(Route.catchAll("r", small).withTimeout(Duration.ofSeconds(30))));
    HttpResult result = send(HttpRequest.get("/").build());
    assertThat(result.routerTimeout()).contains(Duration.ofSeconds(30));
    assertThat(smallSeen.get(0).headers().first("x-envoy-expected-rq-timeout-ms"))
        .contains("30000");

    restart();
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.builder().route(Route.catchAll("r", small)).suppressEnvoyHeaders(true).build());
    send(HttpRequest.get("/").build());
    assertThat(smallSeen.get(1).headers().contains("x-envoy-expected-rq-timeout-ms")).isFalse();

    restart();
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.single(small));
    HttpResult disabled = send(HttpRequest.get("/").build());
    assertThat(disabled.routerTimeout()).contains(Duration.ZERO);
    assertThat(smallSeen.get(2).headers().contains("x-envoy-expected-rq-timeout-ms")).isFalse();
  }

  @Test
  void upstreamRqTimeoutHeader_overridesTheRoute_isRemoved_andNonNumericIsIgnored()
      throws Exception {
    start(ScriptedExtProcServer::continueEverything, requestHeadersOnly().build(), modelRoutes());

    HttpResult numeric =
        send(HttpRequest.get("/").header("x-envoy-upstream-rq-timeout-ms", "2500").build());
    HttpResult junk =
        send(HttpRequest.get("/").header("x-envoy-upstream-rq-timeout-ms", "soon").build());
    HttpResult zero =
        send(HttpRequest.get("/").header("x-envoy-upstream-rq-timeout-ms", "0").build());

    assertThat(numeric.routerTimeout()).contains(Duration.ofMillis(2500));
    assertThat(junk.routerTimeout()).contains(Route.DEFAULT_TIMEOUT);
    assertThat(zero.routerTimeout()).contains(Duration.ZERO);
    assertThat(smallSeen).hasSize(3);
    assertThat(smallSeen)
        .allSatisfy(
            r -> assertThat(r.headers().contains("x-envoy-upstream-rq-timeout-ms")).isFalse());
    assertThat(smallSeen.get(0).headers().first("x-envoy-expected-rq-timeout-ms")).contains("2500");
    assertThat(smallSeen.get(1).headers().first("x-envoy-expected-rq-timeout-ms"))
        .contains("15000");
    assertThat(smallSeen.get(2).headers().contains("x-envoy-expected-rq-timeout-ms")).isFalse();
  }

  @Test
  void respectExpectedRqTimeout_theExpectedHeaderWins_andTheUpstreamHeaderStays() throws Exception {
    HttpRequest both =
        HttpRequest.get("/")
            .header("x-envoy-expected-rq-timeout-ms", "700")
            .header("x-envoy-upstream-rq-timeout-ms", "300")
            .build();
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.builder()
            .route(Route.catchAll("r", small))
            .respectExpectedRqTimeout(true)
            .build());
    HttpResult respected = send(both);

    assertThat(respected.routerTimeout()).contains(Duration.ofMillis(700));
    assertThat(smallSeen.get(0).headers().first("x-envoy-upstream-rq-timeout-ms")).contains("300");
    assertThat(smallSeen.get(0).headers().first("x-envoy-expected-rq-timeout-ms")).contains("700");

    restart();
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.of(Route.catchAll("r", small)));
    HttpResult notRespected = send(both);

    assertThat(notRespected.routerTimeout()).contains(Duration.ofMillis(300));
    assertThat(smallSeen.get(1).headers().contains("x-envoy-upstream-rq-timeout-ms")).isFalse();
    assertThat(smallSeen.get(1).headers().first("x-envoy-expected-rq-timeout-ms")).contains("300");
  }

  @Test
  void timeoutSetByTheServer_slowUpstream_504BeforeResponseHeaders_upstreamCancelled()
      throws Exception {
    List<UpstreamRequest> seen = new CopyOnWriteArrayList<>();
    List<CompletableFuture<UpstreamResponse>> pending = new CopyOnWriteArrayList<>();
    Upstream hanging =
        req -> {
          seen.add(req);
          CompletableFuture<UpstreamResponse> never = new CompletableFuture<>();
          pending.add(never);
          return never;
        };
    Script script =
        (stream, msg) ->
            stream.reply(
                continueRequestHeaders(setHeaders("x-envoy-upstream-rq-timeout-ms", "500")));
    start(
        script,
        FilterConfig.builder().messageTimeout(Duration.ofSeconds(2)).allowEnvoy(true).build(),
        RouteTable.of(Route.catchAll("slow", hanging)));

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.post("/v1/chat", CHAT).build());
    await(() -> !seen.isEmpty()); // the router's timer is armed before the upstream is called
    clock.advance(Duration.ofMillis(499));
    assertThat(f).as("the 500 ms router timeout has not fired").isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.outcome()).isEqualTo(Outcome.LOCAL_REPLY);
    assertThat(result.status()).isEqualTo(504);
    assertThat(result.bodyUtf8()).isEqualTo("upstream request timeout");
    assertThat(result.header("content-type")).contains("text/plain");
    assertThat(result.responseCodeDetails()).isEqualTo("upstream_response_timeout");
    assertThat(result.routerTimeout()).contains(Duration.ofMillis(500));
    assertThat(result.total()).isEqualTo(Duration.ofMillis(500)); // virtual time
    assertThat(pending.get(0)).isCancelled();
    HttpHeaders upstreamSaw = seen.get(0).headers();
    assertThat(upstreamSaw.contains("x-envoy-upstream-rq-timeout-ms")).isFalse();
    assertThat(upstreamSaw.first("x-envoy-expected-rq-timeout-ms")).contains("500");
    ScriptedExtProcServer.ServerStream stream = server.onlyStream();
    assertThat(awaitEnd(stream)).isEqualTo(End.CANCELLED);
    assertThat(stream.received).hasSize(1); // no response_headers: the local reply skips ext_proc
    assertThat(envoy.stats().messageTimeouts()).isZero();
  }

  /** An upstream whose response headers come at once and whose body stalls after one chunk. */
  private static final class StallingUpstream implements Upstream {
    final AtomicBoolean bodyCancelled = new AtomicBoolean();
    final List<UpstreamRequest> seen = new CopyOnWriteArrayList<>();

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      seen.add(request);
      ResponseBody body =
          sink -> {
            sink.onData("data: first\n\n".getBytes(StandardCharsets.UTF_8), false);
            return () -> bodyCancelled.set(true);
          };
      return CompletableFuture.completedFuture(
          new UpstreamResponse(200, HttpHeaders.of("content-type", "text/event-stream"), body));
    }
  }

  @Test
  void timeoutAfterResponseHeadersWentDownstream_resetsTheStream() throws Exception {
    StallingUpstream stalling = new StallingUpstream();
    start(
        ScriptedExtProcServer::continueEverything,
        FilterConfig.builder()
            .messageTimeout(Duration.ofSeconds(2))
            .responseBodyMode(BodyMode.STREAMED)
            .build(),
        RouteTable.of(Route.catchAll("sse", stalling).withTimeout(Duration.ofSeconds(1))));

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.post("/v1/chat", CHAT).build());
    // request_headers, response_headers, the first response_body chunk, all answered
    await(() -> envoy.stats().streamMsgsReceived() == 3);
    clock.advance(Duration.ofMillis(999));
    assertThat(f).isNotDone();
    clock.advance(Duration.ofMillis(1));
    HttpResult result = result(f);

    assertThat(result.outcome()).isEqualTo(Outcome.DOWNSTREAM_RESET);
    assertThat(result.status()).isEqualTo(200);
    assertThat(result.bodyUtf8()).isEqualTo("data: first\n\n"); // truncated
    assertThat(result.responseCodeDetails()).isEqualTo("upstream_response_timeout");
    assertThat(stalling.bodyCancelled).isTrue();
    ScriptedExtProcServer.ServerStream stream = server.onlyStream();
    assertThat(awaitEnd(stream)).isEqualTo(End.CANCELLED);
    assertThat(stream.received.stream().map(ProcessingRequest::getRequestCase))
        .containsExactly(
            ProcessingRequest.RequestCase.REQUEST_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_BODY);
  }

  @Test
  void timeoutWhileExtProcHoldsTheResponseHeaders_504StraightToTheClient() throws Exception {
    StallingUpstream stalling = new StallingUpstream();
    Script script =
        (stream, msg) -> {
          if (msg.hasRequestHeaders()) {
            continueEverything(stream, msg);
          } // response_headers: never answered (the 2 s message timeout is later than the route's)
        };
    start(
        script,
        FilterConfig.builder().messageTimeout(Duration.ofSeconds(2)).build(),
        RouteTable.of(Route.catchAll("sse", stalling).withTimeout(Duration.ofMillis(300))));

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.post("/v1/chat", CHAT).build());
    await(() -> server.streams.size() == 1 && server.onlyStream().received.size() == 2);
    clock.advance(Duration.ofMillis(300));
    HttpResult result = result(f);

    assertThat(result.outcome()).isEqualTo(Outcome.LOCAL_REPLY);
    assertThat(result.status()).isEqualTo(504);
    assertThat(result.bodyUtf8()).isEqualTo("upstream request timeout");
    assertThat(stalling.bodyCancelled).isTrue();
    assertThat(awaitEnd(server.onlyStream())).isEqualTo(End.CANCELLED);
    assertThat(envoy.stats().messageTimeouts()).isZero();
  }

  @Test
  void upstreamResponseComplete_stopsTheTimeout_thoughExtProcStillHoldsTheBody() throws Exception {
    AtomicBoolean holdScheduled = new AtomicBoolean();
    Script script =
        (stream, msg) -> {
          if (msg.hasResponseBody()) {
            stream.replyAfter(
                Duration.ofMillis(800), ScriptedExtProcServer.responseBodyReplacedWith("held"));
            holdScheduled.set(true);
          } else {
            continueEverything(stream, msg);
          }
        };
    start(
        script,
        FilterConfig.builder()
            .messageTimeout(Duration.ofSeconds(2))
            .responseBodyMode(BodyMode.BUFFERED)
            .build(),
        RouteTable.of(Route.catchAll("r", small).withTimeout(Duration.ofMillis(300))));

    CompletableFuture<HttpResult> f = envoy.sendAsync(HttpRequest.get("/").build());
    await(holdScheduled::get);
    clock.advance(Duration.ofMillis(800));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(200);
    assertThat(result.bodyUtf8()).isEqualTo("held");
  }

  @Test
  void altResponseHeader_timeoutAnswers204WithoutBody() throws Exception {
    List<UpstreamRequest> seen = new CopyOnWriteArrayList<>();
    Upstream hanging =
        req -> {
          seen.add(req);
          return new CompletableFuture<>();
        };
    start(
        ScriptedExtProcServer::continueEverything,
        requestHeadersOnly().build(),
        RouteTable.of(Route.catchAll("slow", hanging).withTimeout(Duration.ofMillis(100))));

    CompletableFuture<HttpResult> f =
        envoy.sendAsync(
            HttpRequest.get("/").header("x-envoy-upstream-rq-timeout-alt-response", "").build());
    await(() -> !seen.isEmpty()); // the router's timer is armed before the upstream is called
    clock.advance(Duration.ofMillis(100));
    HttpResult result = result(f);

    assertThat(result.status()).isEqualTo(204);
    assertThat(result.body()).isEmpty();
    assertThat(result.responseCodeDetails()).isEqualTo("upstream_response_timeout");
  }
}
