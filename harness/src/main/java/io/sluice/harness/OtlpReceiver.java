package io.sluice.harness;

import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse;
import io.opentelemetry.proto.collector.logs.v1.LogsServiceGrpc;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;
import io.opentelemetry.proto.collector.metrics.v1.MetricsServiceGrpc;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.collector.trace.v1.TraceServiceGrpc;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * An OTLP/gRPC receiver on 127.0.0.1, on opentelemetry-proto's own service definitions (the real
 * {@code TraceService}, {@code MetricsService} and {@code LogsService}): the tests' collector
 * ({@link #keeping}: every span, metric and log record exported to it and the headers the exporter
 * sent), the floor's live sink ({@link #discarding}: answers every export, keeps nothing), and a
 * collector that refuses every export ({@link #refusing}: a status the exporter does not retry).
 */
public final class OtlpReceiver implements AutoCloseable {
  /** The scope of Sluice's own metrics. */
  public static final String SLUICE_SCOPE = "io.sluice";

  public final List<Span> spans = new CopyOnWriteArrayList<>();

  /** The metrics of Sluice's own scope ({@value #SLUICE_SCOPE}). */
  public final List<Metric> metrics = new CopyOnWriteArrayList<>();

  /** The SDK's own health metrics (other scopes). */
  public final List<Metric> sdkMetrics = new CopyOnWriteArrayList<>();

  public final List<LogRecord> logRecords = new CopyOnWriteArrayList<>();

  /** The scope of each batch of log records, in the order received. */
  public final List<String> logScopes = new CopyOnWriteArrayList<>();

  public final List<String> authorization = new CopyOnWriteArrayList<>();

  private final boolean keep;
  private final Status refuse;
  private final Server server;

  private static final Metadata.Key<String> AUTH =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** A receiver that keeps everything exported to it. */
  public static OtlpReceiver keeping() throws IOException {
    return new OtlpReceiver(true, Status.OK);
  }

  /** A receiver that answers every export and keeps nothing (a live sink). */
  public static OtlpReceiver discarding() throws IOException {
    return new OtlpReceiver(false, Status.OK);
  }

  /** A receiver that refuses every export with {@code INVALID_ARGUMENT} (not retried). */
  public static OtlpReceiver refusing() throws IOException {
    return new OtlpReceiver(false, Status.INVALID_ARGUMENT);
  }

  private OtlpReceiver(boolean keep, Status refuse) throws IOException {
    this.keep = keep;
    this.refuse = refuse;
    ServerInterceptor headers =
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(
              ServerCall<Q, R> call, Metadata md, ServerCallHandler<Q, R> next) {
            String a = md.get(AUTH);
            if (a != null && keep) {
              authorization.add(a);
            }
            return next.startCall(call, md);
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(ServerInterceptors.intercept(new Traces(), headers))
            .addService(ServerInterceptors.intercept(new Metrics(), headers))
            .addService(ServerInterceptors.intercept(new Logs(), headers))
            .build()
            .start();
  }

  public int port() {
    return server.getPort();
  }

  /** {@code http://127.0.0.1:port}: the exporter's endpoint. */
  public String endpoint() {
    return "http://127.0.0.1:" + port();
  }

  /** Answers {@code out} with {@code response}, or with the refusal. */
  private <T> void answer(StreamObserver<T> out, T response) {
    if (!refuse.isOk()) {
      out.onError(refuse.asRuntimeException());
      return;
    }
    out.onNext(response);
    out.onCompleted();
  }

  private final class Traces extends TraceServiceGrpc.TraceServiceImplBase {
    @Override
    public void export(
        ExportTraceServiceRequest request, StreamObserver<ExportTraceServiceResponse> out) {
      if (keep) {
        request
            .getResourceSpansList()
            .forEach(r -> r.getScopeSpansList().forEach(s -> spans.addAll(s.getSpansList())));
      }
      answer(out, ExportTraceServiceResponse.getDefaultInstance());
    }
  }

  private final class Metrics extends MetricsServiceGrpc.MetricsServiceImplBase {
    @Override
    public void export(
        ExportMetricsServiceRequest request, StreamObserver<ExportMetricsServiceResponse> out) {
      if (keep) {
        request
            .getResourceMetricsList()
            .forEach(
                r ->
                    r.getScopeMetricsList()
                        .forEach(
                            s ->
                                (s.getScope().getName().equals(SLUICE_SCOPE) ? metrics : sdkMetrics)
                                    .addAll(s.getMetricsList())));
      }
      answer(out, ExportMetricsServiceResponse.getDefaultInstance());
    }
  }

  private final class Logs extends LogsServiceGrpc.LogsServiceImplBase {
    @Override
    public void export(
        ExportLogsServiceRequest request, StreamObserver<ExportLogsServiceResponse> out) {
      if (keep) {
        request
            .getResourceLogsList()
            .forEach(
                r ->
                    r.getScopeLogsList()
                        .forEach(
                            s -> {
                              logScopes.add(s.getScope().getName());
                              logRecords.addAll(s.getLogRecordsList());
                            }));
      }
      answer(out, ExportLogsServiceResponse.getDefaultInstance());
    }
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
