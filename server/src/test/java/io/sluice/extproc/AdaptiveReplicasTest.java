package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * One learned limit per pool for all replicas: two real servers on the Redis at 127.0.0.1:6379 with
 * an adaptive pool. An upstream 429 with a Retry-After seen by replica a pauses the pool on replica
 * b too (b refuses {@code upstream_overloaded} with a Retry-After no shorter), within one exchange.
 */
class AdaptiveReplicasTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu:
          capacity: 100000
          maxRequests: 8
          adaptive: {enabled: true, minRequests: 2, minCapacity: 20000, interval: 200ms, maxPause: 60s}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 100, maxOutputTokens: 1000}}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      quotas: {keyPrefix: %s}
      replicas: {leaseTtl: 2s, renewInterval: 100ms}
      rateLimit:
        enabled: false
        env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:%d"}
      """;

  private static SluiceServer start(String policy, String replica) throws Exception {
    return SluiceServer.start(
        ConfigLoader.parse(policy),
        new SluiceServer.Options(
            null, Map.of("SLUICE_REPLICA_ID", replica), Ticker.system(), Clock.systemUTC()));
  }

  private static HeaderValue header(String k, String v) {
    return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
  }

  private static ProcessingResponse decide(ExtProcTestClient client) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(
            headers(
                ExtProcServerTestBase.chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    if (!r.hasImmediateResponse()) {
      r = c.send(body("{\"model\":\"gpt-4o\",\"messages\":[]}"));
    }
    if (r.hasImmediateResponse()) {
      c.reset();
      return r;
    }
    // admitted: the upstream answers at once
    c.send(
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(header(":status", "200"))
                            .addHeaders(header("content-type", "application/json"))))
            .build());
    c.send(responseBody("{}", true));
    c.reset();
    return r;
  }

  @Test
  void aPauseOneReplicaSawHoldsOnTheOther() throws Exception {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    String policy =
        POLICY.formatted(
            "adaptive_e2e_" + Long.toHexString(System.nanoTime()) + "_", LocalRedis.PORT);
    try (SluiceServer a = start(policy, "a");
        SluiceServer b = start(policy, "b");
        ExtProcTestClient ca = new ExtProcTestClient(a.grpcPort());
        ExtProcTestClient cb = new ExtProcTestClient(b.grpcPort())) {
      // both admit while nothing went wrong
      await().atMost(Duration.ofSeconds(10)).until(() -> !decide(cb).hasImmediateResponse());
      // replica a's upstream answers 429 with a 30 s Retry-After
      ExtProcTestClient.Call first = ca.open(Map.of());
      first.send(
          headers(
              ExtProcServerTestBase.chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
      assertThat(first.send(body("{\"model\":\"gpt-4o\",\"messages\":[]}")).hasRequestBody())
          .isTrue();
      first.send(
          ProcessingRequest.newBuilder()
              .setResponseHeaders(
                  HttpHeaders.newBuilder()
                      .setHeaders(
                          HeaderMap.newBuilder()
                              .addHeaders(header(":status", "429"))
                              .addHeaders(header("retry-after", "30"))))
              .build());
      first.send(responseBody("{}", true));
      first.reset();
      // replica b learns the pause from the store within an exchange or two
      await()
          .atMost(Duration.ofSeconds(5))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> decide(cb).hasImmediateResponse());
      ProcessingResponse r = decide(cb);
      assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
      assertThat(ExtProcServerTestBase.header(r, "x-sluice-reason"))
          .isEqualTo("upstream_overloaded");
      assertThat(Long.parseLong(ExtProcServerTestBase.header(r, "retry-after")))
          .isGreaterThanOrEqualTo(25);
    }
  }

  /**
   * A replica started while the pool has a learned limit takes it before its start-up returns: its
   * first request is admitted against the pool's limit, not against {@code start}.
   */
  @Test
  void aNewReplicaReadsThePoolsLimitBeforeItServes() throws Exception {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    String policy =
        POLICY.formatted(
            "adaptive_start_" + Long.toHexString(System.nanoTime()) + "_", LocalRedis.PORT);
    try (SluiceServer a = start(policy, "a");
        ExtProcTestClient ca = new ExtProcTestClient(a.grpcPort())) {
      assertThat(a.runtime().controller().pool("gpu").policy().maxRequests()).isEqualTo(8);
      // one request in flight refused 429: the upstream took none, so the floor (2)
      ExtProcTestClient.Call first = ca.open(Map.of());
      first.send(
          headers(
              ExtProcServerTestBase.chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
      assertThat(first.send(body("{\"model\":\"gpt-4o\",\"messages\":[]}")).hasRequestBody())
          .isTrue();
      first.send(
          ProcessingRequest.newBuilder()
              .setResponseHeaders(
                  HttpHeaders.newBuilder()
                      .setHeaders(HeaderMap.newBuilder().addHeaders(header(":status", "429"))))
              .build());
      first.send(responseBody("{}", true));
      first.reset();
      assertThat(a.runtime().controller().pool("gpu").policy().maxRequests()).isEqualTo(2);
      Thread.sleep(500); // a's next exchanges carry the decrease to the store
      try (SluiceServer c = start(policy, "c")) {
        // no wait: the shared limit was read during the start
        assertThat(c.runtime().controller().pool("gpu").configuredPolicy().maxRequests())
            .isEqualTo(8);
        assertThat(c.runtime().controller().pool("gpu").adaptive().requests()).isEqualTo(2);
      }
    }
  }
}
