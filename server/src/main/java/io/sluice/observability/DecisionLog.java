package io.sluice.observability;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.config.SluiceConfig;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The structured decision log: one JSON line per request (the {@code sluice.v1.AdmissionRecord} in
 * proto3 JSON), on logger {@code sluice.decisions}. Admitted requests are logged once, when their
 * permit is released (so the line carries the actual usage and outcome); refused requests when
 * refused. Prompt and completion text never reach the record. Bounded per second by kind ({@code
 * decisionLog.maxAdmittedPerSecond}, {@code maxRefusedPerSecond}) through a {@link
 * DecisionLogBudget}; what does not fit is counted there.
 */
public final class DecisionLog {
  private static final Logger LOG = LoggerFactory.getLogger("sluice.decisions");
  private static final JsonFormat.Printer PRINTER =
      JsonFormat.printer().omittingInsignificantWhitespace();

  private final SluiceConfig.DecisionLog settings;
  private final java.util.function.@Nullable Consumer<String>
      sink; // null: the sluice.decisions logger
  private final @Nullable DecisionLogBudget budget; // null: unbounded
  private java.util.function.@Nullable Consumer<String> file; // decisionLog.file, or null
  private RecordLogs.@Nullable Sink otlp; // decisionLog.otlp (telemetry on), or null

  /**
   * @param sink where the lines go instead of the {@code sluice.decisions} logger (the warm-up's
   *     synthetic streams: the record code path runs, nothing reaches the real log), or null: that
   *     logger
   * @param budget bounds the lines written, or null: unbounded
   */
  public DecisionLog(
      SluiceConfig.DecisionLog settings,
      java.util.function.@Nullable Consumer<String> sink,
      @Nullable DecisionLogBudget budget) {
    this.settings = settings;
    this.sink = sink;
    this.budget = budget;
  }

  /**
   * Also writes every record to {@code file} ({@code decisionLog.file}: a {@link RotatingFile}),
   * whatever the logger's level. Returns this; call before the log is shared.
   */
  public DecisionLog toFile(java.util.function.@Nullable Consumer<String> file) {
    this.file = file;
    return this;
  }

  /**
   * Also emits every record as an OTLP log record ({@code decisionLog.otlp}: {@link RecordLogs}),
   * whatever the logger's level. Returns this; call before the log is shared.
   */
  public DecisionLog toOtlp(RecordLogs.@Nullable Sink otlp) {
    this.otlp = otlp;
    return this;
  }

  /** Whether any record can be written at all (enabled and its logger on). */
  public boolean enabled() {
    return settings.enabled() && levelEnabled();
  }

  /** Whether a record of this kind would be written; lets callers skip building it. */
  public boolean wants(boolean rejected) {
    return sampled(rejected) && (budget == null || budget.take(rejected, max(rejected)));
  }

  /**
   * As {@link #wants(boolean)}, its budget's window at {@code nowNanos}: a time of the process's
   * ticker (the budget's clock) the caller has just read, as a release has.
   */
  public boolean wants(boolean rejected, long nowNanos) {
    return sampled(rejected) && (budget == null || budget.take(rejected, max(rejected), nowNanos));
  }

  /** Enabled, its logger on, and this record sampled. */
  private boolean sampled(boolean rejected) {
    if (!settings.enabled() || !levelEnabled()) {
      return false;
    }
    return (rejected && settings.alwaysLogRejects())
        || settings.sampleRate() >= 1.0
        || ThreadLocalRandom.current().nextDouble() < settings.sampleRate();
  }

  private int max(boolean rejected) {
    return rejected ? settings.maxRefusedPerSecond() : settings.maxAdmittedPerSecond();
  }

  public void write(AdmissionRecord record) {
    String line;
    try {
      line = PRINTER.print(record);
    } catch (InvalidProtocolBufferException e) {
      return;
    }
    java.util.function.Consumer<String> f = file;
    if (f != null) {
      f.accept(line);
    }
    RecordLogs.Sink o = otlp;
    if (o != null) {
      o.emit(record, line);
    }
    if (sink != null) {
      sink.accept(line);
      return;
    }
    switch (settings.level()) {
      case TRACE -> LOG.trace(line);
      case INFO -> LOG.info(line);
      case WARN -> LOG.warn(line);
      case DEBUG -> LOG.debug(line);
    }
  }

  private boolean levelEnabled() {
    if (sink != null || file != null || otlp != null) {
      return true;
    }
    return switch (settings.level()) {
      case TRACE -> LOG.isTraceEnabled();
      case INFO -> LOG.isInfoEnabled();
      case WARN -> LOG.isWarnEnabled();
      case DEBUG -> LOG.isDebugEnabled();
    };
  }
}
