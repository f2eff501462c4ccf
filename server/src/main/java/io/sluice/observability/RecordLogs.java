package io.sluice.observability;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.logs.Logger;
import io.opentelemetry.api.logs.Severity;
import io.opentelemetry.exporter.otlp.http.logs.OtlpHttpLogRecordExporter;
import io.opentelemetry.exporter.otlp.logs.OtlpGrpcLogRecordExporter;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.logs.SdkLoggerProvider;
import io.opentelemetry.sdk.logs.data.LogRecordData;
import io.opentelemetry.sdk.logs.export.BatchLogRecordProcessor;
import io.opentelemetry.sdk.logs.export.LogRecordExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.config.SluiceConfig;
import io.sluice.config.TelemetryPolicy;
import io.sluice.config.TelemetrySection;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * drain. Emitting never blocks a request: a record that would pass the queue's bound (records
 * emitted and not yet exported or failed) is dropped, and so are the records of an export that
 * failed (after the exporter's retries); both are counted by cause ({@link #dropped}, the metric
 * {@code sluice_decision_log_otlp_dropped_total}).
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

  /** The batch processor's default queue: the records held at most, emitted and not exported. */
  public static final int QUEUE = 2048;

  /** The batch processor's default batch. */
  private static final int BATCH = 512;

  /** {@code cause} of records dropped because the queue was full. */
  public static final String QUEUE_FULL = "queue_full";

  /** {@code cause} of records dropped because their export failed. */
  public static final String EXPORT_FAILED = "export_failed";

  private final Map<String, String> env;
  private final int queue;
  private final AtomicLong queueFull = new AtomicLong();
  private final AtomicLong exportFailed = new AtomicLong();
  private TelemetryPolicy.@Nullable Exporter current;
  private @Nullable SdkLoggerProvider provider;
  private AtomicInteger pending = new AtomicInteger(); // of the current provider

  /**
   * With the exporter's headers read from {@code env} ({@code telemetry.headersEnv}) and a queue of
   * {@code queue} records ({@link #QUEUE} in the server).
   */
  public RecordLogs(Map<String, String> env, int queue) {
    this.env = Map.copyOf(env);
    this.queue = queue;
  }

  /** The counter of dropped records, by cause: {@code sluice_decision_log_otlp_dropped_total}. */
  public void bindTo(io.micrometer.core.instrument.MeterRegistry registry) {
    for (String cause : new String[] {QUEUE_FULL, EXPORT_FAILED}) {
      io.micrometer.core.instrument.FunctionCounter.builder(
              MetricNames.DECISION_LOG_OTLP_DROPPED, this, r -> r.dropped(cause))
          .tag("cause", cause)
          .description(
              "decision records not exported as OTLP logs (decisionLog.otlp): the queue was full"
                  + " or the export failed")
          .register(registry);
    }
  }

  /** The records dropped so far for {@code cause} ({@link #QUEUE_FULL}, {@link #EXPORT_FAILED}). */
  public long dropped(String cause) {
    return (cause.equals(QUEUE_FULL) ? queueFull : exportFailed).get();
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
      pending = new AtomicInteger();
      p =
          build(
              x,
              new Counted(exporter(x, TelemetryExport.headers(env.get(x.headersEnv()))), pending));
      provider = p;
      current = x;
    }
    Logger logger = p.loggerBuilder(SCOPE).build();
    AtomicInteger held = pending;
    return (record, line) -> {
      if (held.incrementAndGet() > queue) { // the processor's queue would drop it: count it here
        held.decrementAndGet();
        queueFull.incrementAndGet();
        return;
      }
      emit(logger, record, line);
    };
  }

  /**
   * The exporter, wrapped: each batch exported or failed gives its room in the queue back, a failed
   * one's records are counted (the processor's queue never holds more than {@code held}, so it
   * never drops a record uncounted).
   */
  private final class Counted implements LogRecordExporter {
    private final LogRecordExporter exporter;
    private final AtomicInteger held;

    Counted(LogRecordExporter exporter, AtomicInteger held) {
      this.exporter = exporter;
      this.held = held;
    }

    @Override
    public CompletableResultCode export(Collection<LogRecordData> logs) {
      int n = logs.size();
      CompletableResultCode r;
      try {
        r = exporter.export(logs);
      } catch (RuntimeException e) {
        r = CompletableResultCode.ofFailure();
      }
      CompletableResultCode done = r;
      return r.whenComplete(
          () -> {
            held.addAndGet(-n);
            if (!done.isSuccess()) {
              exportFailed.addAndGet(n);
            }
          });
    }

    @Override
    public CompletableResultCode flush() {
      return exporter.flush();
    }

    @Override
    public CompletableResultCode shutdown() {
      return exporter.shutdown();
    }
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

  private static LogRecordExporter exporter(
      TelemetryPolicy.Exporter x, Map<String, String> headers) {
    if (x.protocol().equals(TelemetryPolicy.GRPC)) {
      var eb = OtlpGrpcLogRecordExporter.builder().setEndpoint(x.endpoint());
      headers.forEach(eb::addHeader);
      return eb.build();
    }
    String base = x.endpoint().endsWith("/") ? x.endpoint() : x.endpoint() + "/";
    var eb = OtlpHttpLogRecordExporter.builder().setEndpoint(base + "v1/logs");
    headers.forEach(eb::addHeader);
    return eb.build();
  }

  private SdkLoggerProvider build(TelemetryPolicy.Exporter x, LogRecordExporter exporter) {
    AttributesBuilder attrs = Attributes.builder();
    x.resource().forEach(attrs::put);
    Resource resource = Resource.getDefault().merge(Resource.create(attrs.build()));
    return SdkLoggerProvider.builder()
        .setResource(resource)
        .addLogRecordProcessor(
            BatchLogRecordProcessor.builder(exporter)
                .setScheduleDelay(x.exportInterval().toMillis(), TimeUnit.MILLISECONDS)
                // never full: the bound is kept in front of it (the sink), where it is counted
                .setMaxQueueSize(Math.max(queue, BATCH))
                .setMaxExportBatchSize(BATCH)
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
