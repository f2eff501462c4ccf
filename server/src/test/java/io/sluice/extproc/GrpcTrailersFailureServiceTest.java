package io.sluice.extproc;

import static io.sluice.extproc.UpstreamFixtures.headerMap;
import static io.sluice.extproc.UpstreamFixtures.trailers;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A gRPC upstream's failure in the response trailers, after its 200 and a body ({@code
 * response_trailer_mode: SEND}; docs/envoy.md, "Typed upstream failures"): the trailers get
 * Sluice's headers, Retry-After at least the upstream's {@code grpc-retry-pushback-ms}, counted
 * with the other upstream failures as {@code annotated}; an OK or another status passes untouched.
 * The emulated Envoy sends no trailers: this drives Sluice's ext_proc service as Envoy would.
 *
 * <p>A proxyless client (grpc-java's xDS filter) sends the trailers of a call that failed before
 * any message as {@code response_headers} with {@code end_of_stream} and no {@code :status}: a
 * {@code grpc-status} there is typed as after a 200.
 */
class GrpcTrailersFailureServiceTest extends ExtProcServerTestBase {
  @Override
  protected String policy() {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {gpu: {capacity: 100000}}
        classes: {interactive: {reservedShare: 1.0}}
        tiers: {free: {weight: 1}}
        tenants: {anonymousTier: free, unknown: admit, unknownTier: free}
        signals: {tenant: [{metadata: x-sluice-tenant}]}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
          - {name: generate, match: {path: /pkg.Llm/Generate}, class: interactive, format: auto}
        """;
  }

  /**
   * An admitted gRPC call whose upstream answered 200 and a message; returns its trailers' answer.
   */
  private ProcessingResponse callEndingWith(ProcessingRequest trailers) throws Exception {
    return UpstreamFixtures.grpcCallAnswered(client, Map.of("x-sluice-tenant", "acme"))
        .send(trailers);
  }

  private static Map<String, String> set(ProcessingResponse r) {
    Map<String, String> m = new LinkedHashMap<>();
    r.getResponseTrailers()
        .getHeaderMutation()
        .getSetHeadersList()
        .forEach(
            o ->
                m.put(
                    o.getHeader().getKey(),
                    o.getHeader().getRawValue().toString(StandardCharsets.UTF_8)));
    return m;
  }

  private double failures(String kind, String answer) {
    var c =
        server
            .registry()
            .find("sluice.upstream.failures")
            .tags("pool", "gpu", "kind", kind, "answer", answer)
            .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void unavailableInTrailers_getsSluicesHeaders_retryAfterFromThePushback() throws Exception {
    ProcessingResponse r =
        callEndingWith(
            trailers(
                "grpc-status", "14", "grpc-message", "busy", "grpc-retry-pushback-ms", "4200"));

    assertThat(r.hasResponseTrailers()).isTrue();
    Map<String, String> set = set(r);
    assertThat(set)
        .containsEntry("x-sluice-reason", "upstream_unavailable")
        .containsEntry("x-sluice-upstream-grpc-status", "14")
        .containsEntry("x-sluice-upstream-status", "503");
    assertThat(Long.parseLong(set.get("retry-after"))).isGreaterThanOrEqualTo(5);
    assertThat(set).doesNotContainKey("grpc-status"); // the upstream's status stays
    assertThat(failures("unavailable", "annotated")).isEqualTo(1.0);
  }

  @Test
  void resourceExhaustedAndDeadline_typedAsRateLimitedAndTimeout() throws Exception {
    assertThat(set(callEndingWith(trailers("grpc-status", "8", "retry-after", "7"))))
        .containsEntry("x-sluice-reason", "upstream_rate_limited")
        .containsEntry("retry-after", "7");
    assertThat(set(callEndingWith(trailers("grpc-status", "4"))))
        .containsEntry("x-sluice-reason", "upstream_timeout");
    assertThat(failures("rate_limited", "annotated")).isEqualTo(1.0);
    assertThat(failures("timeout", "annotated")).isEqualTo(1.0);
  }

  @Test
  void okOrAnotherStatus_passesUntouched_notCounted() throws Exception {
    assertThat(callEndingWith(trailers("grpc-status", "0")).getResponseTrailers())
        .isEqualTo(ProcessingResponse.getDefaultInstance().getResponseTrailers());
    assertThat(set(callEndingWith(trailers("grpc-status", "5")))).isEmpty();
    assertThat(failures("unavailable", "annotated")).isZero();
  }

  /**
   * A proxyless call (no pseudo-headers, the method as the flat {@code request.path} attribute,
   * bodies NONE) admitted at its headers; returns the answer to its trailers-only response headers.
   */
  private ProcessingResponse proxylessCallEndingWith(String... trailers) throws Exception {
    ExtProcTestClient.Call call = client.open(Map.of("x-sluice-tenant", "acme"));
    ProcessingResponse admitted =
        call.send(
            ProcessingRequest.newBuilder()
                .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(headerMap("x-app", "1")))
                .putAttributes(
                    "request.path",
                    Struct.newBuilder()
                        .putFields(
                            "", Value.newBuilder().setStringValue("/pkg.Llm/Generate").build())
                        .build())
                .setProtocolConfig(
                    ProtocolConfiguration.newBuilder()
                        .setRequestBodyMode(BodySendMode.NONE)
                        .setResponseBodyMode(BodySendMode.NONE))
                .build());
    assertThat(admitted.hasRequestHeaders()).as("admitted: %s", admitted).isTrue();
    return call.send(
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder().setHeaders(headerMap(trailers)).setEndOfStream(true))
            .build());
  }

  private double upstreamResponses(String status) {
    var c =
        server
            .registry()
            .find("sluice.upstream.responses")
            .tags("pool", "gpu", "status", status)
            .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void proxylessTrailersOnly_noStatusHeader_typedFromItsGrpcStatus() throws Exception {
    ProcessingResponse r = proxylessCallEndingWith("grpc-status", "8", "grpc-message", "full");

    assertThat(r.hasImmediateResponse()).as("%s", r).isTrue();
    assertThat(r.getImmediateResponse().getGrpcStatus().getStatus())
        .as("RESOURCE_EXHAUSTED: the only status grpc-java reads")
        .isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED.value());
    Map<String, String> set = new LinkedHashMap<>();
    r.getImmediateResponse()
        .getHeaders()
        .getSetHeadersList()
        .forEach(
            o ->
                set.put(
                    o.getHeader().getKey(),
                    o.getHeader().getRawValue().toString(StandardCharsets.UTF_8)));
    assertThat(set)
        .containsEntry("x-sluice-reason", "upstream_rate_limited")
        .containsEntry("x-sluice-upstream-grpc-status", "8");
    assertThat(failures("rate_limited", "typed")).isEqualTo(1.0);
    assertThat(upstreamResponses("429")).as("the pool saw the mapped status").isEqualTo(1.0);
  }

  @Test
  void proxylessTrailersOnly_okOrNoGrpcStatus_continues_statusNotCounted() throws Exception {
    assertThat(proxylessCallEndingWith("grpc-status", "0").hasResponseHeaders()).isTrue();
    assertThat(proxylessCallEndingWith("x-app", "1").hasResponseHeaders()).isTrue();
    assertThat(failures("rate_limited", "typed")).isZero();
    assertThat(
            server.registry().find("sluice.upstream.responses").counters().stream()
                .mapToDouble(c -> c.count())
                .sum())
        .as("no :status and no failure: nothing counted")
        .isZero();
  }
}
