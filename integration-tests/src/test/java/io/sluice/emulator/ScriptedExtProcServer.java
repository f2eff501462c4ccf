package io.sluice.emulator;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A tiny ext_proc server for emulator tests: each incoming message is handed to a {@link Script},
 * which answers (now or later) through the {@link ServerStream}. Records what it saw.
 */
final class ScriptedExtProcServer implements AutoCloseable {

  @FunctionalInterface
  interface Script {
    void onMessage(ServerStream stream, ProcessingRequest message);
  }

  /** How a server call ended, as the server observed it. */
  enum End {
    CANCELLED,
    HALF_CLOSED_BY_CLIENT
  }

  private static final Context.Key<Metadata> HEADERS = Context.key("headers");
  private static final Context.Key<String> AUTHORITY = Context.key("authority");

  final List<ServerStream> streams = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService timers;
  private final Server server;
  private volatile Script script;

  ScriptedExtProcServer(Script script) throws IOException {
    this(script, Executors.newSingleThreadScheduledExecutor());
  }

  /** With {@code replyAfter} delays run by {@code timers} (a {@link VirtualScheduler} in tests). */
  ScriptedExtProcServer(Script script, ScheduledExecutorService timers) throws IOException {
    this.script = script;
    this.timers = timers;
    ExternalProcessorGrpc.ExternalProcessorImplBase service =
        new ExternalProcessorGrpc.ExternalProcessorImplBase() {
          @Override
          public StreamObserver<ProcessingRequest> process(
              StreamObserver<ProcessingResponse> responses) {
            ServerStream stream =
                new ServerStream(
                    (ServerCallStreamObserver<ProcessingResponse>) responses,
                    HEADERS.get(),
                    AUTHORITY.get());
            streams.add(stream);
            return stream.requests;
          }
        };
    ServerInterceptor capture =
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(
              ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            Context ctx =
                Context.current().withValues(HEADERS, headers, AUTHORITY, call.getAuthority());
            return Contexts.interceptCall(ctx, call, headers, next);
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(ServerInterceptors.intercept(service, capture))
            .build()
            .start();
  }

  String target() {
    return "127.0.0.1:" + server.getPort();
  }

  ServerStream onlyStream() {
    if (streams.size() != 1) {
      throw new AssertionError("expected exactly one stream, got " + streams.size());
    }
    return streams.get(0);
  }

  @Override
  public void close() throws InterruptedException {
    timers.shutdownNow();
    server.shutdownNow();
    server.awaitTermination(5, TimeUnit.SECONDS);
  }

  /** One server call. */
  final class ServerStream {
    final List<ProcessingRequest> received = new CopyOnWriteArrayList<>();
    final Metadata headers;
    final String authority;
    final CompletableFuture<End> end = new CompletableFuture<>();
    private final ServerCallStreamObserver<ProcessingResponse> out;
    final StreamObserver<ProcessingRequest> requests;

    ServerStream(
        ServerCallStreamObserver<ProcessingResponse> out, Metadata headers, String authority) {
      this.out = out;
      this.headers = headers;
      this.authority = authority;
      out.setOnCancelHandler(() -> end.complete(End.CANCELLED));
      this.requests =
          new StreamObserver<>() {
            @Override
            public void onNext(ProcessingRequest value) {
              received.add(value);
              script.onMessage(ServerStream.this, value);
            }

            @Override
            public void onError(Throwable t) {
              end.complete(End.CANCELLED);
            }

            @Override
            public void onCompleted() {
              end.complete(End.HALF_CLOSED_BY_CLIENT);
            }
          };
    }

    String header(String key) {
      return headers.get(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER));
    }

    synchronized void reply(ProcessingResponse response) {
      if (!out.isCancelled()) {
        out.onNext(response);
      }
    }

    void replyAfter(Duration delay, ProcessingResponse response) {
      timers.schedule(() -> reply(response), delay.toNanos(), TimeUnit.NANOSECONDS);
    }

    synchronized void closeOk() {
      if (!out.isCancelled()) {
        out.onCompleted();
      }
    }

    synchronized void closeWith(Status status) {
      if (!out.isCancelled()) {
        out.onError(status.asRuntimeException());
      }
    }
  }

  // --- response builders ---------------------------------------------------------------------

  static HeaderMutation setHeaders(String... namesAndValues) {
    HeaderMutation.Builder m = HeaderMutation.newBuilder();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      m.addSetHeaders(
          HeaderValueOption.newBuilder()
              .setHeader(
                  HeaderValue.newBuilder()
                      .setKey(namesAndValues[i])
                      .setRawValue(ByteString.copyFromUtf8(namesAndValues[i + 1]))));
    }
    return m.build();
  }

  static ProcessingResponse continueRequestHeaders() {
    return ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse continueRequestHeaders(HeaderMutation mutation) {
    return ProcessingResponse.newBuilder()
        .setRequestHeaders(
            HeadersResponse.newBuilder()
                .setResponse(CommonResponse.newBuilder().setHeaderMutation(mutation)))
        .build();
  }

  static ProcessingResponse continueResponseHeaders() {
    return ProcessingResponse.newBuilder()
        .setResponseHeaders(HeadersResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse continueRequestBody() {
    return ProcessingResponse.newBuilder()
        .setRequestBody(BodyResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse responseBodyReplacedWith(String body) {
    return ProcessingResponse.newBuilder()
        .setResponseBody(
            BodyResponse.newBuilder()
                .setResponse(
                    CommonResponse.newBuilder()
                        .setBodyMutation(
                            BodyMutation.newBuilder()
                                .setBody(ByteString.copyFrom(body, StandardCharsets.UTF_8)))))
        .build();
  }

  static ProcessingResponse overrideTimeout(Duration d) {
    return ProcessingResponse.newBuilder()
        .setOverrideMessageTimeout(
            com.google.protobuf.Duration.newBuilder()
                .setSeconds(d.getSeconds())
                .setNanos(d.getNano()))
        .build();
  }

  /** Answers every phase with an empty CONTINUE. */
  static void continueEverything(ServerStream stream, ProcessingRequest message) {
    ProcessingResponse.Builder r = ProcessingResponse.newBuilder();
    switch (message.getRequestCase()) {
      case REQUEST_HEADERS -> r.setRequestHeaders(HeadersResponse.getDefaultInstance());
      case RESPONSE_HEADERS -> r.setResponseHeaders(HeadersResponse.getDefaultInstance());
      case REQUEST_BODY -> r.setRequestBody(BodyResponse.getDefaultInstance());
      case RESPONSE_BODY -> r.setResponseBody(BodyResponse.getDefaultInstance());
      default -> throw new AssertionError("unexpected " + message.getRequestCase());
    }
    stream.reply(r.build());
  }
}
