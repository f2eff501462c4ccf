package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.Decision;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.harness.OtlpReceiver;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@code decisionLog.otlp}: the records reach an OTLP/gRPC receiver (opentelemetry-proto's own logs
 * service, in process: {@link OtlpReceiver}) through the SDK's log exporter, the record's JSON line
 * as the body; records dropped on the way are counted by cause. In integration-tests (package
 * {@code io.sluice.observability}, for {@code RecordLogs}' test constructor) because the receiver
 * is harness's, and server's tests do not take harness: its rule tests check every {@code
 * io.sluice} class on their class path.
 */
class RecordLogsTest {
  private static SluiceConfig policy(int port, boolean telemetry, boolean otlp) {
    return policy(port, telemetry, otlp, "1s");
  }

  private static SluiceConfig policy(int port, boolean telemetry, boolean otlp, String interval) {
    return ConfigLoader.parse(
        """
        pools: {p: {capacity: 1000000, maxRequests: 1}}
        classes: {c: {rank: 0}}
        routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
        telemetry:
          enabled: %s
          endpoint: http://127.0.0.1:%d
          exportInterval: %s
        decisionLog: {enabled: true, otlp: %s}
        """
            .formatted(telemetry, port, interval, otlp));
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
    try (OtlpReceiver receiver = OtlpReceiver.keeping()) {
      SluiceConfig c = policy(receiver.port(), true, true);
      List<String> lines = new CopyOnWriteArrayList<>();
      RecordLogs logs = new RecordLogs(Map.of(), RecordLogs.QUEUE);
      DecisionLog log = new DecisionLog(c.decisionLog(), lines::add, null).toOtlp(logs.sink(c));
      log.write(record());
      logs.close(); // flushes the batch
      assertThat(lines).hasSize(1);
      assertThat(receiver.logRecords).hasSize(1);
      LogRecord r = receiver.logRecords.get(0);
      assertThat(r.getBody().getStringValue()).isEqualTo(lines.get(0));
      assertThat(receiver.logScopes).containsExactly(RecordLogs.SCOPE);
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
    try (RecordLogs logs = new RecordLogs(Map.of(), RecordLogs.QUEUE)) {
      assertThat(SluiceConfig.DecisionLog.DEFAULTS.otlp()).isFalse();
      assertThat(logs.sink(policy(4317, true, false))).isNull();
      assertThat(logs.sink(policy(4317, false, true))).isNull();
    }
  }

  @Test
  void aFullQueue_dropsTheRecordsPastIt_andCountsThem() throws Exception {
    // the receiver is up but the batch waits for the 10-minute export interval: the queue of 3
    // holds the first three records, the other five are dropped as they come
    try (OtlpReceiver receiver = OtlpReceiver.keeping();
        RecordLogs logs = new RecordLogs(Map.of(), 3)) {
      RecordLogs.Sink sink = logs.sink(policy(receiver.port(), true, true, "10m"));
      for (int i = 0; i < 8; i++) {
        sink.emit(record(), "{}");
      }
      assertThat(logs.dropped(RecordLogs.QUEUE_FULL)).isEqualTo(5);
      logs.close(); // flushes the three held
      assertThat(receiver.logRecords).hasSize(3);
      assertThat(logs.dropped(RecordLogs.EXPORT_FAILED)).isZero();
    }
  }

  @Test
  void aFailedExport_dropsItsRecords_andCountsThem_andTheMetricShowsBothCauses() throws Exception {
    io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
        new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    try (OtlpReceiver receiver = OtlpReceiver.refusing();
        RecordLogs logs = new RecordLogs(Map.of(), RecordLogs.QUEUE)) {
      logs.bindTo(registry);
      RecordLogs.Sink sink = logs.sink(policy(receiver.port(), true, true));
      for (int i = 0; i < 4; i++) {
        sink.emit(record(), "{}");
      }
      logs.close(); // exports the batch: refused
      assertThat(logs.dropped(RecordLogs.EXPORT_FAILED)).isEqualTo(4);
      assertThat(logs.dropped(RecordLogs.QUEUE_FULL)).isZero();
      assertThat(
              registry
                  .get("sluice.decision_log.otlp_dropped")
                  .tag("cause", "export_failed")
                  .functionCounter()
                  .count())
          .isEqualTo(4.0);
      assertThat(
              registry
                  .get("sluice.decision_log.otlp_dropped")
                  .tag("cause", "queue_full")
                  .functionCounter()
                  .count())
          .isZero();
    }
  }
}
