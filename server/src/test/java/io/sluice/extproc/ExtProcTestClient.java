package io.sluice.extproc;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A minimal raw ext_proc client for adapter tests: one call = one HTTP request. */
final class ExtProcTestClient implements AutoCloseable {
  private final ManagedChannel channel;

  ExtProcTestClient(int port) {
    this.channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  Call open(Map<String, String> initialMetadata) {
    Metadata md = new Metadata();
    initialMetadata.forEach(
        (k, v) -> md.put(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER), v));
    Call call = new Call();
    ExternalProcessorGrpc.newStub(channel)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md))
        .process(call);
    return call;
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  static ProcessingRequest headers(
      Map<String, String> headers,
      boolean endOfStream,
      ProcessingMode.BodySendMode reqBody,
      ProcessingMode.BodySendMode respBody) {
    HeaderMap.Builder hm = HeaderMap.newBuilder();
    headers.forEach(
        (k, v) ->
            hm.addHeaders(
                HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v))));
    ProcessingRequest.Builder b =
        ProcessingRequest.newBuilder()
            .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(hm).setEndOfStream(endOfStream));
    if (reqBody != null) {
      b.setProtocolConfig(
          ProtocolConfiguration.newBuilder()
              .setRequestBodyMode(reqBody)
              .setResponseBodyMode(respBody));
    }
    return b.build();
  }

  static ProcessingRequest body(String body) {
    return ProcessingRequest.newBuilder()
        .setRequestBody(
            HttpBody.newBuilder()
                .setBody(ByteString.copyFrom(body, StandardCharsets.UTF_8))
                .setEndOfStream(true))
        .build();
  }

  static ProcessingRequest responseHeaders(int status, String contentType, boolean eos) {
    return ProcessingRequest.newBuilder()
        .setResponseHeaders(
            HttpHeaders.newBuilder()
                .setEndOfStream(eos)
                .setHeaders(
                    HeaderMap.newBuilder()
                        .addHeaders(
                            HeaderValue.newBuilder()
                                .setKey(":status")
                                .setRawValue(ByteString.copyFromUtf8(Integer.toString(status))))
                        .addHeaders(
                            HeaderValue.newBuilder()
                                .setKey("content-type")
                                .setRawValue(ByteString.copyFromUtf8(contentType)))))
        .build();
  }

  static ProcessingRequest responseBody(String chunk, boolean eos) {
    return ProcessingRequest.newBuilder()
        .setResponseBody(
            HttpBody.newBuilder().setBody(ByteString.copyFromUtf8(chunk)).setEndOfStream(eos))
        .build();
  }

  /** One stream. */
  static final class Call implements ClientResponseObserver<ProcessingRequest, ProcessingResponse> {
    final BlockingQueue<ProcessingResponse> responses = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> closed = new CompletableFuture<>();
    private ClientCallStreamObserver<ProcessingRequest> requests;

    @Override
    public void beforeStart(ClientCallStreamObserver<ProcessingRequest> requestStream) {
      this.requests = requestStream;
    }

    @Override
    public void onNext(ProcessingResponse value) {
      responses.add(value);
    }

    @Override
    public void onError(Throwable t) {
      closed.complete(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      closed.complete(Status.OK);
    }

    ProcessingResponse send(ProcessingRequest r) throws InterruptedException {
      requests.onNext(r);
      ProcessingResponse resp = responses.poll(5, TimeUnit.SECONDS);
      if (resp == null) {
        throw new AssertionError("no answer within 5 s to " + r.getRequestCase());
      }
      return resp;
    }

    void sendOnly(ProcessingRequest r) {
      requests.onNext(r);
    }

    /** Envoy's end-of-request close: a reset, seen by the server as CANCELLED. */
    void reset() {
      requests.cancel("envoy reset", null);
    }

    void halfClose() {
      requests.onCompleted();
    }

    Status awaitClose() throws Exception {
      return closed.get(5, TimeUnit.SECONDS);
    }
  }

  /** The body of a GET of {@code path} on the admin port {@code adminPort} of 127.0.0.1. */
  static String adminGet(int adminPort, String path) throws Exception {
    return java.net.http.HttpClient.newHttpClient()
        .send(
            java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + adminPort + path))
                .build(),
            java.net.http.HttpResponse.BodyHandlers.ofString())
        .body();
  }
}
