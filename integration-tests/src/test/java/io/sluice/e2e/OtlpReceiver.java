package io.sluice.e2e;

import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;
import io.opentelemetry.proto.collector.metrics.v1.MetricsServiceGrpc;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.collector.trace.v1.TraceServiceGrpc;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * An OTLP/gRPC receiver for tests, on opentelemetry-proto's own service definitions (the real
 * {@code TraceService} and {@code MetricsService}): keeps every span and metric exported to it and
 * the headers the exporter sent.
 */
final class OtlpReceiver implements AutoCloseable {
  final List<Span> spans = new CopyOnWriteArrayList<>();

  /** The metrics of Sluice's own scope ({@code io.sluice}). */
  final List<Metric> metrics = new CopyOnWriteArrayList<>();

  /** The SDK's own health metrics (other scopes). */
  final List<Metric> sdkMetrics = new CopyOnWriteArrayList<>();

  final List<String> authorization = new CopyOnWriteArrayList<>();
  private final Server server;

  private static final Metadata.Key<String> AUTH =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  OtlpReceiver() throws java.io.IOException {
    ServerInterceptor headers =
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(
              ServerCall<Q, R> call, Metadata md, ServerCallHandler<Q, R> next) {
            String a = md.get(AUTH);
            if (a != null) {
              authorization.add(a);
            }
            return next.startCall(call, md);
          }
        };
    TraceServiceGrpc.TraceServiceImplBase traces =
        new TraceServiceGrpc.TraceServiceImplBase() {
          @Override
          public void export(
              ExportTraceServiceRequest request, StreamObserver<ExportTraceServiceResponse> out) {
            request
                .getResourceSpansList()
                .forEach(r -> r.getScopeSpansList().forEach(s -> spans.addAll(s.getSpansList())));
            out.onNext(ExportTraceServiceResponse.getDefaultInstance());
            out.onCompleted();
          }
        };
    MetricsServiceGrpc.MetricsServiceImplBase metricsService =
        new MetricsServiceGrpc.MetricsServiceImplBase() {
          @Override
          public void export(
              ExportMetricsServiceRequest request,
              StreamObserver<ExportMetricsServiceResponse> out) {
            request
                .getResourceMetricsList()
                .forEach(
                    r ->
                        r.getScopeMetricsList()
                            .forEach(
                                s ->
                                    (s.getScope().getName().equals("io.sluice")
                                            ? metrics
                                            : sdkMetrics)
                                        .addAll(s.getMetricsList())));
            out.onNext(ExportMetricsServiceResponse.getDefaultInstance());
            out.onCompleted();
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(ServerInterceptors.intercept(traces, headers))
            .addService(ServerInterceptors.intercept(metricsService, headers))
            .build()
            .start();
  }

  int port() {
    return server.getPort();
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
