package io.sluice.observability;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.config.SluiceConfig;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The structured decision log: one JSON line per request (the {@code sluice.v1.AdmissionRecord} in
 * proto3 JSON), on logger {@code sluice.decisions}. Admitted requests are logged once, when their
 * permit is released (so the line carries the actual usage and outcome); refused requests when
 * refused. Prompt and completion text never reach the record.
 */
public final class DecisionLog {
  private static final Logger LOG = LoggerFactory.getLogger("sluice.decisions");
  private static final JsonFormat.Printer PRINTER =
      JsonFormat.printer().omittingInsignificantWhitespace();

  private final SluiceConfig.DecisionLog settings;

  public DecisionLog(SluiceConfig.DecisionLog settings) {
    this.settings = settings;
  }

  /** Whether any record can be written at all (enabled and its logger on). */
  public boolean enabled() {
    return settings.enabled() && levelEnabled();
  }

  /** Whether a record of this kind would be written; lets callers skip building it. */
  public boolean wants(boolean rejected) {
    if (!settings.enabled() || !levelEnabled()) {
      return false;
    }
    if (rejected && settings.alwaysLogRejects()) {
      return true;
    }
    return settings.sampleRate() >= 1.0
        || ThreadLocalRandom.current().nextDouble() < settings.sampleRate();
  }

  public void write(AdmissionRecord record) {
    String line;
    try {
      line = PRINTER.print(record);
    } catch (InvalidProtocolBufferException e) {
      return;
    }
    switch (settings.level()) {
      case "trace" -> LOG.trace(line);
      case "info" -> LOG.info(line);
      case "warn" -> LOG.warn(line);
      default -> LOG.debug(line);
    }
  }

  private boolean levelEnabled() {
    return switch (settings.level()) {
      case "trace" -> LOG.isTraceEnabled();
      case "info" -> LOG.isInfoEnabled();
      case "warn" -> LOG.isWarnEnabled();
      default -> LOG.isDebugEnabled();
    };
  }
}
