package io.sluice.extproc;

import static io.sluice.extproc.UpstreamFixtures.compact;
import static io.sluice.extproc.UpstreamFixtures.trailers;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A gRPC upstream's failure in the response trailers (after its 200 and a message) teaches an
 * adaptive pool what the same failure trailers-only teaches it (AdaptivePoolServiceTest's 429 with
 * a Retry-After): {@code grpc-status: 8} with {@code grpc-retry-pushback-ms: 20000} is the 429
 * Envoy maps it to, so the limit settles at what the upstream took (its floor: nothing else was in
 * flight) and the pool pauses for the pushback; the next request is refused {@code
 * upstream_overloaded} at once. The answer ends as that failure, not as the 200 its headers said.
 */
class GrpcTrailersLearningServiceTest extends ExtProcServerTestBase {
  @Override
  protected String policy() {
    return UpstreamFixtures.ADAPTIVE_POOL;
  }

  private String admin(String path) throws Exception {
    return ExtProcTestClient.adminGet(server.adminPort(), path);
  }

  @Test
  void resourceExhaustedInTrailers_pausesThePoolAndShrinksItsLimit_asTrailersOnlyDoes()
      throws Exception {
    UpstreamFixtures.awaitAdaptiveStart(server.adminPort());
    ExtProcTestClient.Call call = UpstreamFixtures.grpcCallAnswered(client, Map.of());
    ProcessingResponse t =
        call.send(trailers("grpc-status", "8", "grpc-retry-pushback-ms", "20000"));
    assertThat(t.hasResponseTrailers()).isTrue();
    call.reset();

    ProcessingResponse r = UpstreamFixtures.nextAnswer(client);
    assertThat(r.hasImmediateResponse()).as("paused: refused at once").isTrue();
    assertThat(header(r, "x-sluice-reason")).isEqualTo("upstream_overloaded");
    assertThat(Long.parseLong(header(r, "retry-after"))).isGreaterThanOrEqualTo(19);

    assertThat(compact(admin("/debug/queues"))).contains("\"requests\":2");
    assertThat(admin("/metrics"))
        .contains("sluice_pool_capacity_effective{dimension=\"requests\",pool=\"gpu\"} 2.0")
        .contains("sluice_pool_adaptive_answers_total{pool=\"gpu\",source=\"upstream\"} 1.0")
        .containsPattern("sluice_answers_total\\{[^}]*result=\"failed\"[^}]*} 1.0");
  }
}
