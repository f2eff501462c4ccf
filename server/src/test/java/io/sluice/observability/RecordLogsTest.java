package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse;
import io.opentelemetry.proto.collector.logs.v1.LogsServiceGrpc;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.Decision;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@code decisionLog.otlp}: the records reach an OTLP/gRPC receiver (opentelemetry-proto's own logs
 * service, in process) through the SDK's log exporter, the record's JSON line as the body.
 */
class RecordLogsTest {
  /** Keeps every log record exported to it, and its scope's name. */
  static final class LogsReceiver implements AutoCloseable {
    final List<LogRecord> records = new CopyOnWriteArrayList<>();
    final List<String> scopes = new CopyOnWriteArrayList<>();
    final Server server;

    LogsReceiver() throws java.io.IOException {
      LogsServiceGrpc.LogsServiceImplBase logs =
          new LogsServiceGrpc.LogsServiceImplBase() {
            @Override
            public void export(
                ExportLogsServiceRequest request, StreamObserver<ExportLogsServiceResponse> out) {
              request
                  .getResourceLogsList()
                  .forEach(
                      r ->
                          r.getScopeLogsList()
                              .forEach(
                                  s -> {
                                    scopes.add(s.getScope().getName());
                                    records.addAll(s.getLogRecordsList());
                                  }));
              out.onNext(ExportLogsServiceResponse.getDefaultInstance());
              out.onCompleted();
            }
          };
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(logs)
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

  private static SluiceConfig policy(int port, boolean telemetry, boolean otlp) {
    return ConfigLoader.parse(
        """
        pools: {p: {capacity: 1000000, maxRequests: 1}}
        classes: {c: {rank: 0}}
        routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
        telemetry:
          enabled: %s
          endpoint: http://127.0.0.1:%d
          exportInterval: 1s
        decisionLog: {enabled: true, otlp: %s}
        """
            .formatted(telemetry, port, otlp));
  }

  private static AdmissionRecord record() {
    return AdmissionRecord.newBuilder()
        .setSchemaVersion(2)
        .setPool("llm")
        .setClassName("batch")
        .setTenant("acme")
        .setDecision(Decision.DECISION_REJECT)
        .setReason("queue_full")
        .setArrivalTime(com.google.protobuf.Timestamp.newBuilder().setSeconds(1_800_000_000L))
        .build();
  }

  @Test
  void everyRecordWritten_isALogRecordWithItsJsonLineAsBody() throws Exception {
    try (LogsReceiver receiver = new LogsReceiver()) {
      SluiceConfig c = policy(receiver.port(), true, true);
      List<String> lines = new CopyOnWriteArrayList<>();
      RecordLogs logs = new RecordLogs(Map.of());
      DecisionLog log = new DecisionLog(c.decisionLog(), lines::add, null).toOtlp(logs.sink(c));
      log.write(record());
      logs.close(); // flushes the batch
      assertThat(lines).hasSize(1);
      assertThat(receiver.records).hasSize(1);
      LogRecord r = receiver.records.get(0);
      assertThat(r.getBody().getStringValue()).isEqualTo(lines.get(0));
      assertThat(receiver.scopes).containsExactly(RecordLogs.SCOPE);
      assertThat(r.getTimeUnixNano()).isEqualTo(1_800_000_000L * 1_000_000_000L);
      Map<String, String> attrs =
          r.getAttributesList().stream()
              .collect(
                  Collectors.toMap(
                      KeyValue::getKey,
                      kv ->
                          kv.getValue().hasIntValue()
                              ? String.valueOf(kv.getValue().getIntValue())
                              : kv.getValue().getStringValue()));
      assertThat(attrs)
          .containsEntry("event.name", RecordLogs.EVENT)
          .containsEntry("sluice.record.schema_version", "2")
          .containsEntry("sluice.pool", "llm")
          .containsEntry("sluice.class", "batch")
          .containsEntry("sluice.tenant", "acme")
          .containsEntry("sluice.decision", "DECISION_REJECT")
          .containsEntry("sluice.reason", "queue_full");
    }
  }

  @Test
  void offByDefault_andOffWithoutTelemetry() throws Exception {
    try (RecordLogs logs = new RecordLogs(Map.of())) {
      assertThat(SluiceConfig.DecisionLog.DEFAULTS.otlp()).isFalse();
      assertThat(logs.sink(policy(4317, true, false))).isNull();
      assertThat(logs.sink(policy(4317, false, true))).isNull();
    }
  }
}
