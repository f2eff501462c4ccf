package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.UpstreamFixtures.compact;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An adaptive pool on the ext_proc path of a real server: an upstream 429 with a Retry-After
 * shrinks the limit and pauses the pool, so the next request is refused at once {@code
 * upstream_overloaded} with a Retry-After no shorter than the upstream's, and the limit, its cause
 * and the pause show in /debug/queues, the metrics and /config.
 */
class AdaptivePoolServiceTest extends ExtProcServerTestBase {
  @Override
  protected String policy() {
    return UpstreamFixtures.ADAPTIVE_POOL;
  }

  private ExtProcTestClient.Call admitted() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse h =
        c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(h.hasImmediateResponse()).isFalse();
    ProcessingResponse b =
        c.send(
            body("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
    assertThat(b.hasRequestBody()).as("admitted").isTrue();
    return c;
  }

  private static ProcessingRequest upstreamHeaders(int status, String retryAfter) {
    return upstreamHeaders(status, retryAfter, Map.of());
  }

  private static ProcessingRequest upstreamHeaders(
      int status, String retryAfter, Map<String, String> more) {
    HeaderMap.Builder h =
        HeaderMap.newBuilder()
            .addHeaders(header(":status", Integer.toString(status)))
            .addHeaders(header("content-type", "application/json"));
    if (retryAfter != null) {
      h.addHeaders(header("retry-after", retryAfter));
    }
    more.forEach((k, v) -> h.addHeaders(header(k, v)));
    return ProcessingRequest.newBuilder()
        .setResponseHeaders(HttpHeaders.newBuilder().setHeaders(h))
        .build();
  }

  private static HeaderValue header(String k, String v) {
    return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
  }

  private String admin(String path) throws Exception {
    return ExtProcTestClient.adminGet(server.adminPort(), path);
  }

  @Test
  void anUpstream429WithRetryAfterPausesThePoolAndShrinksItsLimit() throws Exception {
    // the adaptive limit starts at its ceiling (start: ceiling, the default)
    UpstreamFixtures.awaitAdaptiveStart(server.adminPort());
    ExtProcTestClient.Call first = admitted();
    first.send(upstreamHeaders(429, "20"));
    first.send(responseBody("{\"error\":{\"type\":\"rate_limit_error\"}}", true));
    first.reset();

    ProcessingResponse r = UpstreamFixtures.nextAnswer(client);
    assertThat(r.hasImmediateResponse()).isTrue();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("upstream_overloaded");
    assertThat(Long.parseLong(header(r, "retry-after"))).isGreaterThanOrEqualTo(19);

    String debug = compact(admin("/debug/queues"));
    assertThat(debug)
        .contains("\"adaptive\"")
        .contains("\"maxRequests\":8")
        .contains("\"requests\":2"); // 1 in flight: the upstream took none, so the floor
    assertThat(debug).containsPattern("\"pausedMs\":(19|20)\\d\\d\\d");
    String metrics = admin("/metrics");
    assertThat(metrics)
        .contains("sluice_pool_capacity_effective{dimension=\"requests\",pool=\"gpu\"} 2.0")
        .contains("sluice_pool_capacity{pool=\"gpu\"} 100000.0")
        .containsPattern("sluice_pool_upstream_pause_seconds\\{pool=\"gpu\"} 1\\d\\.");
    assertThat(admin("/config?format=yaml")).contains("adaptive:").contains("minRequests: 2");
  }

  /**
   * A tenant's rate-limit refusal (Envoy's rate-limit filter after ext_proc: 429 with {@code
   * x-envoy-ratelimited} and a Retry-After) reaches the response path but is no upstream answer:
   * the pool is neither paused nor shrunk, and the answer is counted by its source.
   */
  @Test
  void aTenantsRateLimit429NeitherPausesNorShrinksThePool() throws Exception {
    UpstreamFixtures.awaitAdaptiveStart(server.adminPort());
    for (int i = 0; i < 5; i++) {
      ExtProcTestClient.Call limited = admitted();
      limited.send(
          upstreamHeaders(
              429, "30", Map.of("x-envoy-ratelimited", "true", "content-type", "text/plain")));
      limited.reset();
    }
    ExtProcTestClient.Call next = admitted(); // not paused
    next.reset();
    String debug = compact(admin("/debug/queues"));
    assertThat(debug).contains("\"requests\":8").contains("\"pausedMs\":0");
    assertThat(debug).contains("\"cause\":\"start\"");
    String metrics = admin("/metrics");
    assertThat(metrics)
        .contains("sluice_pool_capacity_effective{dimension=\"requests\",pool=\"gpu\"} 8.0")
        .contains("sluice_pool_adaptive_answers_total{pool=\"gpu\",source=\"envoy_ratelimit\"} 5.0")
        .contains("sluice_pool_adaptive_answers_total{pool=\"gpu\",source=\"upstream\"} 0.0");
  }
}
