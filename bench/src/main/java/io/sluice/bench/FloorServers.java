package io.sluice.bench;

import static io.sluice.bench.FloorMessages.RLS_CONFIG;

import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/** The servers the floor bench measures: a no-op ext_proc and Sluice in-process. */
final class FloorServers {
  private FloorServers() {}

  /** ext_proc that answers CONTINUE at once and completes on half-close. */
  static final class NoOp implements AutoCloseable {
    static final ProcessingResponse CONTINUE =
        ProcessingResponse.newBuilder()
            .setRequestHeaders(
                HeadersResponse.newBuilder().setResponse(CommonResponse.newBuilder()))
            .build();
    static final ProcessingResponse CONTINUE_REQUEST_BODY =
        ProcessingResponse.newBuilder()
            .setRequestBody(
                io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse.newBuilder()
                    .setResponse(CommonResponse.newBuilder()))
            .build();
    static final ProcessingResponse CONTINUE_RESPONSE_HEADERS =
        ProcessingResponse.newBuilder()
            .setResponseHeaders(
                HeadersResponse.newBuilder().setResponse(CommonResponse.newBuilder()))
            .build();
    static final ProcessingResponse CONTINUE_RESPONSE_BODY =
        ProcessingResponse.newBuilder()
            .setResponseBody(
                io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse.newBuilder()
                    .setResponse(CommonResponse.newBuilder()))
            .build();
    static final RateLimitResponse OK =
        RateLimitResponse.newBuilder().setOverallCode(RateLimitResponse.Code.OK).build();
    final Server server;

    NoOp(int port) throws IOException {
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
              .directExecutor()
              .addService(
                  new ExternalProcessorGrpc.ExternalProcessorImplBase() {
                    @Override
                    public StreamObserver<ProcessingRequest> process(
                        StreamObserver<ProcessingResponse> responses) {
                      return new StreamObserver<>() {
                        @Override
                        public void onNext(ProcessingRequest value) {
                          switch (value.getRequestCase()) {
                            case REQUEST_HEADERS -> responses.onNext(CONTINUE);
                            case REQUEST_BODY -> responses.onNext(CONTINUE_REQUEST_BODY);
                            case RESPONSE_HEADERS -> responses.onNext(CONTINUE_RESPONSE_HEADERS);
                            case RESPONSE_BODY -> responses.onNext(CONTINUE_RESPONSE_BODY);
                            default -> {}
                          }
                        }

                        @Override
                        public void onError(Throwable t) {}

                        @Override
                        public void onCompleted() {
                          responses.onCompleted();
                        }
                      };
                    }
                  })
              .addService(
                  new RateLimitServiceGrpc.RateLimitServiceImplBase() {
                    @Override
                    public void shouldRateLimit(
                        RateLimitRequest request, StreamObserver<RateLimitResponse> responses) {
                      responses.onNext(OK);
                      responses.onCompleted();
                    }
                  })
              .build()
              .start();
    }

    @Override
    public void close() throws InterruptedException {
      stop(server);
    }
  }

  /** Stops {@code server} at once, waiting up to 5 s for it to end. */
  static void stop(Server server) throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(5, TimeUnit.SECONDS);
  }

  /** Sluice in-process on a policy. */
  static final class Sluice implements AutoCloseable {
    final SluiceServer server;
    final Path runtime;

    /** With {@code redis} (host:port) as the store, or the in-memory store when null. */
    Sluice(String policy, int port, @Nullable String redis) throws IOException {
      runtime = Files.createTempDirectory("sluice-rls");
      Files.createDirectories(runtime.resolve("config"));
      Files.writeString(runtime.resolve("config").resolve("bench.yaml"), RLS_CONFIG);
      String withRls =
          policy
              .replace("grpc: {host: 127.0.0.1, port: 0", "grpc: {host: 127.0.0.1, port: " + port)
              .replace(
                  "rateLimit: {enabled: false}",
                  "rateLimit: {enabled: true, env: {RUNTIME_ROOT: \""
                      + runtime
                      + "\", RUNTIME_SUBDIRECTORY: \"\", RUNTIME_WATCH_ROOT: \"false\""
                      + (redis == null ? "" : ", BACKEND_TYPE: redis, REDIS_URL: \"" + redis + "\"")
                      + "}}");
      server = SluiceServer.start(ConfigLoader.parse(withRls));
    }

    @Override
    public void close() throws IOException {
      server.close();
      try (var files = Files.walk(runtime)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }
}
