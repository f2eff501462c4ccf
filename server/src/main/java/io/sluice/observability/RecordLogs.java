package io.sluice.observability;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.logs.Logger;
import io.opentelemetry.api.logs.Severity;
import io.opentelemetry.exporter.otlp.http.logs.OtlpHttpLogRecordExporter;
import io.opentelemetry.exporter.otlp.logs.OtlpGrpcLogRecordExporter;
import io.opentelemetry.sdk.logs.SdkLoggerProvider;
import io.opentelemetry.sdk.logs.export.BatchLogRecordProcessor;
import io.opentelemetry.sdk.logs.export.LogRecordExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.config.SluiceConfig;
import io.sluice.config.TelemetryPolicy;
import io.sluice.config.TelemetrySection;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The decision records as OTLP log records ({@code decisionLog.otlp}, docs/replay.md "Records"):
 * while {@code telemetry.enabled}, every record the decision log writes is also emitted through the
 * OpenTelemetry SDK's logs pipeline (a batch processor and the OTLP log exporter) to {@code
 * telemetry.exporter}'s endpoint, protocol, headers and resource. The log record's body is the
 * record's proto3 JSON, the same line the file holds ({@code sluice.v1.AdmissionRecord}, schema in
 * {@code proto/}), so a replay reads it back unchanged; a few attributes let a collector route and
 * filter without parsing it.
 *
 * <p>One per process: the SDK is built when a snapshot first turns it on, kept across reloads that
 * keep the exporter's settings, rebuilt (the old one flushed) when they change, shut down at the
 * drain. The batch processor's queue is bounded (the SDK drops past it); emitting never blocks a
 * request.
 */
public final class RecordLogs implements AutoCloseable {
  /** The instrumentation scope of the log records. */
  public static final String SCOPE = "sluice.decisions";

  /** {@code event.name} of every record. */
  public static final String EVENT = "sluice.admission_record";

  static final AttributeKey<String> EVENT_NAME = AttributeKey.stringKey("event.name");
  static final AttributeKey<Long> SCHEMA = AttributeKey.longKey("sluice.record.schema_version");
  static final AttributeKey<String> POOL = AttributeKey.stringKey("sluice.pool");
  static final AttributeKey<String> CLASS = AttributeKey.stringKey("sluice.class");
  static final AttributeKey<String> TENANT = AttributeKey.stringKey("sluice.tenant");
  static final AttributeKey<String> DECISION = AttributeKey.stringKey("sluice.decision");
  static final AttributeKey<String> REASON = AttributeKey.stringKey("sluice.reason");

  /** Where a record goes: the record and its JSON line. */
  public interface Sink {
    void emit(AdmissionRecord record, String line);
  }

  private final Map<String, String> env;
  private TelemetryPolicy.@Nullable Exporter current;
  private @Nullable SdkLoggerProvider provider;

  /** With the exporter's headers read from {@code env} ({@code telemetry.headersEnv}). */
  public RecordLogs(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /**
   * The sink of a snapshot of {@code config}, or null when {@code decisionLog.otlp} or {@code
   * telemetry.enabled} is off (an SDK built for an earlier snapshot is kept until {@link #close}).
   */
  public synchronized @Nullable Sink sink(SluiceConfig config) {
    TelemetryPolicy t = config.section(TelemetrySection.SECTION);
    if (!config.decisionLog().otlp() || !t.enabled()) {
      return null;
    }
    TelemetryPolicy.Exporter x = t.exporter();
    SdkLoggerProvider p = provider;
    if (p == null || !x.equals(current)) {
      if (p != null) {
        p.close(); // flushes what the old one batched
      }
      p = build(x, TelemetryExport.headers(env.get(x.headersEnv())));
      provider = p;
      current = x;
    }
    Logger logger = p.loggerBuilder(SCOPE).build();
    return (record, line) -> emit(logger, record, line);
  }

  /** One record as one log record: the JSON line as its body, a few attributes beside it. */
  static void emit(Logger logger, AdmissionRecord r, String line) {
    AttributesBuilder a =
        Attributes.builder()
            .put(EVENT_NAME, EVENT)
            .put(SCHEMA, (long) r.getSchemaVersion())
            .put(POOL, r.getPool())
            .put(CLASS, r.getClassName())
            .put(TENANT, r.getTenant())
            .put(DECISION, r.getDecision().name());
    if (!r.getReason().isEmpty()) {
      a.put(REASON, r.getReason());
    }
    var b =
        logger
            .logRecordBuilder()
            .setSeverity(Severity.INFO)
            .setBody(line)
            .setAllAttributes(a.build());
    if (r.hasArrivalTime()) {
      b.setTimestamp(
          r.getArrivalTime().getSeconds() * 1_000_000_000L + r.getArrivalTime().getNanos(),
          TimeUnit.NANOSECONDS);
    }
    b.emit();
  }

  private static SdkLoggerProvider build(TelemetryPolicy.Exporter x, Map<String, String> headers) {
    AttributesBuilder attrs = Attributes.builder();
    x.resource().forEach(attrs::put);
    Resource resource = Resource.getDefault().merge(Resource.create(attrs.build()));
    LogRecordExporter exporter;
    if (x.protocol().equals(TelemetryPolicy.GRPC)) {
      var eb = OtlpGrpcLogRecordExporter.builder().setEndpoint(x.endpoint());
      headers.forEach(eb::addHeader);
      exporter = eb.build();
    } else {
      String base = x.endpoint().endsWith("/") ? x.endpoint() : x.endpoint() + "/";
      var eb = OtlpHttpLogRecordExporter.builder().setEndpoint(base + "v1/logs");
      headers.forEach(eb::addHeader);
      exporter = eb.build();
    }
    return SdkLoggerProvider.builder()
        .setResource(resource)
        .addLogRecordProcessor(
            BatchLogRecordProcessor.builder(exporter)
                .setScheduleDelay(x.exportInterval().toMillis(), TimeUnit.MILLISECONDS)
                .build())
        .build();
  }

  /** Flushes and shuts the SDK down (the drain); a later snapshot builds a new one. */
  @Override
  public synchronized void close() {
    SdkLoggerProvider p = provider;
    provider = null;
    current = null;
    if (p != null) {
      p.shutdown().join(5, TimeUnit.SECONDS);
    }
  }
}
