package io.sluice.envoyconfig;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.HttpHeaders;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The shipped standalone bootstraps type the local replies Envoy sends for an upstream's failure
 * (docs/envoy.md, "Typed upstream failures"): each response flag of a route timeout, a reset or
 * connection failure, and of no healthy upstream or an overflow has a mapper that adds {@code
 * x-sluice-reason} and {@code retry-after} and renders Sluice's JSON error (scope {@code upstream},
 * retryable); parsed into Envoy's own protos (the 1.34 API).
 */
class LocalReplyConfigTest {
  static final Path DIR =
      Path.of(System.getProperty("user.dir")).resolve("../envoy-config").normalize();
  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @CsvSource({
    "envoy.yaml, UT, upstream_timeout, 504, upstream_response_timeout",
    "envoy.yaml, UMSDR, upstream_timeout, 504, upstream_max_stream_duration_reached",
    "envoy.yaml, UR, upstream_reset, 503, upstream_reset_before_response_started{remote_reset}",
    "envoy.yaml, UF, upstream_reset, 503, upstream_reset_before_response_started{connection_failure}",
    "envoy.yaml, UC, upstream_reset, 503, upstream_reset_before_response_started{connection_termination}",
    "envoy.yaml, LR, upstream_reset, 503, upstream_reset_before_response_started{local_reset}",
    "envoy.yaml, URX, upstream_reset, 503, upstream_reset_before_response_started{overflow}",
    "envoy.yaml, UH, upstream_unavailable, 503, no_healthy_upstream",
    "envoy.yaml, UO, upstream_unavailable, 503, upstream_reset_before_response_started{overflow}",
    "envoy-headers-only.yaml, UT, upstream_timeout, 504, upstream_response_timeout",
    "envoy-headers-only.yaml, UR, upstream_reset, 503, upstream_reset_before_response_started{remote_reset}",
    "envoy-headers-only.yaml, UH, upstream_unavailable, 503, no_healthy_upstream",
  })
  void everyUpstreamFailureFlag_hasATypedMapper(
      String file, String flag, String reason, int status, String details) throws Exception {
    LocalReplyMappers mappers = LocalReplyMappers.load(DIR.resolve(file));
    ResponseMapper m = mappers.mapper(flag).orElseThrow(() -> new AssertionError(flag));
    assertThat(m.getHeadersToAddList())
        .anySatisfy(
            h -> {
              assertThat(h.getHeader().getKey()).isEqualTo("x-sluice-reason");
              assertThat(h.getHeader().getValue()).isEqualTo(reason);
            })
        .anySatisfy(h -> assertThat(h.getHeader().getKey()).isEqualTo("retry-after"));
    assertThat(m.hasStatusCode()).as("the status stays Envoy's").isFalse();
    assertThat(m.getBodyFormatOverride().getContentType()).isEqualTo("application/json");

    // rendered on a local reply as Envoy renders it
    HttpResult local =
        HttpResult.beforeRouter(
            HttpResult.Outcome.LOCAL_REPLY,
            status,
            HttpHeaders.of("content-type", "text/plain"),
            List.of("upstream request timeout".getBytes(java.nio.charset.StandardCharsets.UTF_8)),
            details,
            com.google.protobuf.Struct.getDefaultInstance(),
            false,
            Optional.empty(),
            Optional.empty(),
            Optional.empty(),
            Duration.ZERO);
    Optional<String> derived = LocalReplyMappers.flag(details);
    HttpResult typed =
        derived.isPresent() && derived.get().equals(flag) ? mappers.apply(local) : null;
    if (typed != null) {
      assertThat(typed.status()).isEqualTo(status);
      assertThat(typed.header("x-sluice-reason")).contains(reason);
      assertThat(typed.header("content-type")).contains("application/json");
      JsonNode error = JSON.readTree(typed.body()).path("error");
      assertThat(error.path("code").asText()).isEqualTo(reason);
      assertThat(error.path("scope").asText()).isEqualTo("upstream");
      assertThat(error.path("retryable").asBoolean()).isTrue();
      assertThat(error.path("retry_after_seconds").asInt()).isEqualTo(1);
      assertThat(error.path("upstream_status").asInt()).isEqualTo(status);
      assertThat(error.path("message").asText()).contains(details);
    }
  }
}
