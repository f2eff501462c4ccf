package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.core.adapt.AnswerSource;
import org.junit.jupiter.api.Test;

/** Which answers are an upstream's own failure, and of which kind; the typed body. */
class UpstreamFailuresTest {
  @Test
  void theUpstreamsOwnFailures_byStatus() {
    assertThat(UpstreamFailures.kind(429, AnswerSource.UPSTREAM, null))
        .isEqualTo(UpstreamFailures.Kind.RATE_LIMITED);
    assertThat(UpstreamFailures.kind(503, AnswerSource.UPSTREAM, null))
        .isEqualTo(UpstreamFailures.Kind.UNAVAILABLE);
    assertThat(UpstreamFailures.kind(502, AnswerSource.UPSTREAM, null))
        .isEqualTo(UpstreamFailures.Kind.UNAVAILABLE);
    assertThat(UpstreamFailures.kind(529, AnswerSource.UPSTREAM, null))
        .isEqualTo(UpstreamFailures.Kind.OVERLOADED);
    assertThat(UpstreamFailures.kind(504, AnswerSource.UPSTREAM, null))
        .isEqualTo(UpstreamFailures.Kind.TIMEOUT);
    for (int status : new int[] {200, 400, 401, 404, 413, 500}) {
      assertThat(UpstreamFailures.kind(status, AnswerSource.UPSTREAM, null)).isNull();
    }
  }

  @Test
  void envoysRateLimitOverloadAndSluicesOwnAnswers_areNotTyped() {
    for (AnswerSource s :
        new AnswerSource[] {
          AnswerSource.ENVOY_RATELIMIT, AnswerSource.ENVOY_OVERLOAD, AnswerSource.SLUICE
        }) {
      assertThat(UpstreamFailures.kind(429, s, null)).isNull();
      assertThat(UpstreamFailures.kind(503, s, null)).isNull();
    }
  }

  @Test
  void envoyLocalReplies_byTheirDetails() {
    assertThat(
            UpstreamFailures.kind(
                503,
                AnswerSource.ENVOY_LOCAL,
                "upstream_reset_before_response_started{connection_failure}"))
        .isEqualTo(UpstreamFailures.Kind.RESET);
    assertThat(UpstreamFailures.kind(504, AnswerSource.ENVOY_LOCAL, "upstream_response_timeout"))
        .isEqualTo(UpstreamFailures.Kind.TIMEOUT);
    assertThat(UpstreamFailures.kind(503, AnswerSource.ENVOY_LOCAL, "no_healthy_upstream"))
        .isEqualTo(UpstreamFailures.Kind.UNAVAILABLE);
    assertThat(UpstreamFailures.kind(500, AnswerSource.ENVOY_LOCAL, "ext_proc_error_gRPC_error_14"))
        .isNull();
    assertThat(UpstreamFailures.kind(503, AnswerSource.ENVOY_LOCAL, null)).isNull();
  }

  @Test
  void body_isSluicesShape_scopeUpstream_retryable() throws Exception {
    var error =
        new ObjectMapper()
            .readTree(UpstreamFailures.body(UpstreamFailures.Kind.OVERLOADED, 529, 7, "m"))
            .path("error");
    assertThat(error.path("type").asText()).isEqualTo("overloaded");
    assertThat(error.path("code").asText()).isEqualTo("upstream_overloaded");
    assertThat(error.path("scope").asText()).isEqualTo("upstream");
    assertThat(error.path("retryable").asBoolean()).isTrue();
    assertThat(error.path("retry_after_seconds").asLong()).isEqualTo(7);
    assertThat(error.path("upstream_status").asInt()).isEqualTo(529);
  }
}
