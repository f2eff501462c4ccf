package io.sluice.proxyless;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.GrpcStatus;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What grpc-java's xDS ext_proc client does with answers Sluice must never send, against a scripted
 * ext_proc server (the reasons behind Sluice's rules in docs/envoy.md#proxyless-grpc), and what it
 * sends (docs/emulator.md).
 */
@Timeout(60)
class ProxylessClientBehaviourTest {
  private Server scripted;
  private ProxylessHarness h;
  private final List<ProcessingRequest> received = new CopyOnWriteArrayList<>();

  @AfterEach
  void tearDown() throws InterruptedException {
    if (h != null) {
      h.close();
    }
    if (scripted != null) {
      scripted.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** Starts the suite with the filter pointing at a scripted server instead of Sluice. */
  private void start(BiConsumer<ProcessingRequest, StreamObserver<ProcessingResponse>> script)
      throws IOException {
    scripted =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(
                new ExternalProcessorGrpc.ExternalProcessorImplBase() {
                  @Override
                  public StreamObserver<ProcessingRequest> process(
                      StreamObserver<ProcessingResponse> out) {
                    return new StreamObserver<>() {
                      @Override
                      public void onNext(ProcessingRequest r) {
                        received.add(r);
                        script.accept(r, out);
                      }

                      @Override
                      public void onError(Throwable t) {}

                      @Override
                      public void onCompleted() {
                        out.onCompleted();
                      }
                    };
                  }
                })
            .build()
            .start();
    int port = scripted.getPort();
    h =
        ProxylessHarness.start(
            ProxylessHarness.policy(),
            f -> {
              f.getGrpcServiceBuilder()
                  .getGoogleGrpcBuilder()
                  .setTargetUri("dns:///127.0.0.1:" + port);
              return f;
            });
  }

  private static ProcessingResponse immediate(boolean withGrpcStatus) {
    ImmediateResponse.Builder ir =
        ImmediateResponse.newBuilder()
            .setStatus(HttpStatus.newBuilder().setCodeValue(429))
            .setDetails("refused");
    if (withGrpcStatus) {
      ir.setGrpcStatus(GrpcStatus.newBuilder().setStatus(Status.Code.RESOURCE_EXHAUSTED.value()));
    }
    return ProcessingResponse.newBuilder().setImmediateResponse(ir).build();
  }

  /** Answers each phase the client sends (headers, response headers, trailers) unchanged. */
  private static void passThrough(ProcessingRequest r, StreamObserver<ProcessingResponse> out) {
    ProcessingResponse.Builder answer = ProcessingResponse.newBuilder();
    if (r.hasRequestHeaders()) {
      answer.setRequestHeaders(HeadersResponse.getDefaultInstance());
    } else if (r.hasResponseHeaders()) {
      answer.setResponseHeaders(HeadersResponse.getDefaultInstance());
    } else if (r.hasResponseTrailers()) {
      answer.setResponseTrailers(TrailersResponse.getDefaultInstance());
    } else {
      return;
    }
    out.onNext(answer.build());
  }

  @Test
  void immediateResponseWithoutGrpcStatus_isReadAsOk_soSluiceAlwaysSetsIt() throws IOException {
    start((r, out) -> out.onNext(immediate(false)));

    GrpcCall.Result r = GrpcCall.unary(h.channel, ProxylessHarness.options(), "x");

    // the HTTP 429 is ignored: a refused call looks like a success without a message
    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).isEmpty();
    assertThat(h.model.calls()).isZero();
  }

  @Test
  void immediateResponseWithGrpcStatus_isTheCallsStatus() throws IOException {
    start((r, out) -> out.onNext(immediate(true)));

    GrpcCall.Result r = GrpcCall.unary(h.channel, ProxylessHarness.options(), "x");

    assertThat(r.status().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(r.status().getDescription()).isEqualTo("refused");
    assertThat(h.model.calls()).isZero();
  }

  @Test
  void streamEndedOkBeforeTheAnswer_letsTheCallThroughEvenFailClosed() throws IOException {
    start((r, out) -> out.onCompleted());

    GrpcCall.Result r = GrpcCall.unary(h.channel, ProxylessHarness.options(), "x");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).containsExactly("reply to x");
  }

  /** What the client sends at request headers: no pseudo-headers, flat attributes. */
  @Test
  void requestHeaders_carryOnlyTheCallsMetadata_andFlatAttributes() throws IOException {
    start(ProxylessClientBehaviourTest::passThrough);

    GrpcCall.Result r = GrpcCall.unary(h.channel, ProxylessHarness.options(), "x");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    ProcessingRequest headers = received.get(0);
    assertThat(headers.hasRequestHeaders()).isTrue();
    assertThat(headers.getRequestHeaders().getEndOfStream()).isFalse();
    assertThat(headers.getRequestHeaders().getHeaders().getHeadersList())
        .noneMatch(v -> v.getKey().startsWith(":") || v.getKey().equals("content-type"));
    assertThat(headers.getProtocolConfig().getRequestBodyModeValue()).isZero(); // NONE
    assertThat(headers.getAttributesMap()).containsKeys("request.path", "request.host");
    assertThat(headers.getAttributesOrThrow("request.path").getFieldsOrThrow("").getStringValue())
        .isEqualTo("/sluice.test.Llm/Generate");
    assertThat(received)
        .extracting(ProcessingRequest::getRequestCase)
        .containsExactly(
            ProcessingRequest.RequestCase.REQUEST_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_TRAILERS);
    ProcessingRequest responseHeaders = received.get(1);
    assertThat(responseHeaders.getResponseHeaders().getHeaders().getHeadersList())
        .noneMatch(v -> v.getKey().equals(":status"));
  }

  /**
   * A call the model fails before any message (trailers-only): the client sends its trailers as
   * {@code response_headers} with {@code end_of_stream}, no {@code :status} and no {@code
   * grpc-status} (grpc-java 1.85.1).
   */
  @Test
  void trailersOnlyFailure_isSentAsResponseHeadersWithEndOfStream_withoutAnyStatus()
      throws IOException {
    start(ProxylessClientBehaviourTest::passThrough);
    h.model.failWith(Status.RESOURCE_EXHAUSTED.withDescription("model full"));

    GrpcCall.Result r = GrpcCall.unary(h.channel, ProxylessHarness.options(), "x");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(received)
        .extracting(ProcessingRequest::getRequestCase)
        .containsExactly(
            ProcessingRequest.RequestCase.REQUEST_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS);
    ProcessingRequest trailersOnly = received.get(1);
    assertThat(trailersOnly.getResponseHeaders().getEndOfStream()).isTrue();
    // grpc-java's transport strips grpc-status and grpc-message from the trailers it hands on:
    // only content-type is left, so the model's status never reaches the ext_proc server
    assertThat(trailersOnly.getResponseHeaders().getHeaders().getHeadersList())
        .extracting(v -> v.getKey())
        .containsExactly("content-type");
  }
}
