package io.sluice.bootstrap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.observability.MetricNames;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Filter;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;

/**
 * HTTP/2 abuse refusals of grpc-netty, counted and logged as one short line each. grpc logs them
 * through {@code java.util.logging}: a header list over {@code server.grpc.maxHeaderListSize} as a
 * WARNING "Stream Error" with a ≈ 3 KB stack trace per stream, a connection closed for {@code
 * server.grpc.maxResetsPerWindow} or too many pings as INFO "Transport failed" (its {@code
 * .connections} logger). A filter on those two loggers swallows exactly these records; each becomes
 * {@code sluice_grpc_transport_refusals_total{reason}} and at most one WARN line per reason every
 * {@link #LOG_EVERY_NANOS} (with how many were not logged). Every other record passes unchanged. A
 * connection the premature-reset guard closes (it runs before grpc, which never sees it) is
 * reported through {@link #refused} the same way.
 *
 * <p>Concurrency: the filter is JVM-wide (the loggers are); servers register their counters in a
 * copy-on-write list, so in a JVM with two servers (tests) each counts the other's refusals too.
 */
final class GrpcTransportLog implements AutoCloseable {
  static final String HANDLER_LOGGER = "io.grpc.netty.shaded.io.grpc.netty.NettyServerHandler";
  static final String TRANSPORT_LOGGER =
      "io.grpc.netty.shaded.io.grpc.netty.NettyServerTransport.connections";
  static final long LOG_EVERY_NANOS = 10_000_000_000L;

  /** Refusal reasons (the {@code reason} tag). */
  static final String HEADER_LIST_SIZE = "header_list_size";

  static final String TOO_MANY_RESETS = "too_many_resets";
  static final String TOO_MANY_PINGS = "too_many_pings";

  /** A connection closed by {@code transport.PrematureResetGuard}, before grpc's codec. */
  static final String PREMATURE_RESETS = "premature_resets";

  private static final org.slf4j.Logger LOG = LoggerFactory.getLogger(GrpcTransportLog.class);
  // JUL holds loggers weakly: these strong references keep the filters installed
  private static final Logger HANDLER = Logger.getLogger(HANDLER_LOGGER);
  private static final Logger TRANSPORT = Logger.getLogger(TRANSPORT_LOGGER);
  private static final CopyOnWriteArrayList<GrpcTransportLog> LIVE = new CopyOnWriteArrayList<>();
  private static final Map<String, AtomicLong> LAST_LOGGED = new ConcurrentHashMap<>();
  private static final Map<String, AtomicLong> NOT_LOGGED = new ConcurrentHashMap<>();

  static {
    Filter filter = GrpcTransportLog::publish;
    HANDLER.setFilter(filter);
    TRANSPORT.setFilter(filter);
  }

  private final Map<String, Counter> counters;

  private GrpcTransportLog(MeterRegistry registry) {
    this.counters =
        Map.of(
            HEADER_LIST_SIZE, counter(registry, HEADER_LIST_SIZE),
            TOO_MANY_RESETS, counter(registry, TOO_MANY_RESETS),
            TOO_MANY_PINGS, counter(registry, TOO_MANY_PINGS),
            PREMATURE_RESETS, counter(registry, PREMATURE_RESETS));
  }

  private static Counter counter(MeterRegistry registry, String reason) {
    return Counter.builder(MetricNames.GRPC_TRANSPORT_REFUSALS)
        .description(
            "HTTP/2 abuse refused by the gRPC port: a header list over maxHeaderListSize (431 on"
                + " the stream), a connection closed for too many resets, premature resets or"
                + " pings (GOAWAY)")
        .tag("reason", reason)
        .register(registry);
  }

  /** Counts into {@code registry} until closed. */
  static GrpcTransportLog register(MeterRegistry registry) {
    GrpcTransportLog log = new GrpcTransportLog(registry);
    LIVE.add(log);
    return log;
  }

  @Override
  public void close() {
    LIVE.remove(this);
  }

  /** The refusal a grpc log record reports, or null for any other record. */
  static @Nullable String reason(LogRecord r) {
    for (Throwable t = r.getThrown(), prev = null;
        t != null && t != prev;
        prev = t, t = t.getCause()) {
      if (t.getClass().getName().endsWith("Http2Exception$HeaderListSizeException")) {
        return HEADER_LIST_SIZE;
      }
      String m = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
      if (m.contains("too_many_rststreams")) {
        return TOO_MANY_RESETS;
      }
      if (m.contains("too_many_pings") || m.contains("too many pings")) {
        return TOO_MANY_PINGS;
      }
    }
    return null;
  }

  private static boolean publish(LogRecord r) {
    String reason = reason(r);
    if (reason == null) {
      return true;
    }
    Throwable t = r.getThrown();
    refused(reason, t == null ? r.getMessage() : t.getMessage());
    return false;
  }

  /**
   * Counts one refusal for {@code reason} (in every live registry) and logs it as the WARN line of
   * at most one per reason every {@link #LOG_EVERY_NANOS}; {@code detail} goes in the line.
   */
  static void refused(String reason, @Nullable String detail) {
    for (GrpcTransportLog log : LIVE) {
      Counter c = log.counters.get(reason);
      if (c != null) {
        c.increment();
      }
    }
    long now = System.nanoTime();
    AtomicLong last =
        LAST_LOGGED.computeIfAbsent(reason, k -> new AtomicLong(now - LOG_EVERY_NANOS));
    AtomicLong skipped = NOT_LOGGED.computeIfAbsent(reason, k -> new AtomicLong());
    long seen = last.get();
    if (now - seen >= LOG_EVERY_NANOS && last.compareAndSet(seen, now)) {
      long more = skipped.getAndSet(0);
      LOG.warn(
          "gRPC port refused HTTP/2 abuse: reason={} ({}){}",
          reason,
          detail,
          more == 0 ? "" : " (" + more + " more since the last line)");
    } else {
      skipped.incrementAndGet();
    }
  }
}
