package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * MCP tools' meters (docs/metrics.md, "MCP tools"), the three signals of a tool's dashboard: its
 * queue wait, its shed calls and its calls in flight against its cap; and its service time, which
 * the queue wait is compared with. The label {@code tool} is bounded: a tool rule's name ({@code
 * mcp.tools[].name}), {@code other} (a call no rule names, decided in the route's pool) or {@code
 * none} (messages that are no call). One per process ({@code AdmissionMetrics.part}); thread-safe.
 */
public final class McpMetrics {
  /** Calls by tool and outcome: admitted, shed (a capacity refusal), refused, invalid. */
  public static final String CALLS = "sluice.mcp.tool.calls";

  /** Time a call waited in its tool's queue (admitted or not), by tool. */
  public static final String QUEUE_WAIT = "sluice.mcp.tool.queue.wait";

  /** Time an admitted call held its permit (the tool's service time), by tool. */
  public static final String SERVICE = "sluice.mcp.tool.service";

  /** Calls in flight on this replica, by tool. */
  public static final String IN_FLIGHT = "sluice.mcp.tool.in.flight";

  /** The tool's cap: its pool's {@code maxRequests} (across replicas when shares are on). */
  public static final String LIMIT = "sluice.mcp.tool.limit";

  /** The tool's queue depth: what may wait for its pool ({@code queueDepth}; 0: no pool bound). */
  public static final String QUEUE_LIMIT = "sluice.mcp.tool.queue.limit";

  private static final Duration[] BUCKETS = {
    Duration.ofMillis(5),
    Duration.ofMillis(25),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofSeconds(2),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10),
    Duration.ofSeconds(30),
    Duration.ofSeconds(60)
  };

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Timer> timers = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> inFlight = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> limits = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> queueLimits = new ConcurrentHashMap<>();

  /** The process's MCP meters (one per registry: {@code AdmissionMetrics.part}). */
  public McpMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /** A call's decision: {@code outcome} admitted, shed, refused or invalid. */
  public void call(String tool, String outcome) {
    counters
        .computeIfAbsent(
            tool + '\0' + outcome,
            k ->
                Counter.builder(CALLS)
                    .tags("tool", tool, "outcome", outcome)
                    .description("MCP calls by tool and outcome")
                    .register(registry))
        .increment();
  }

  /** A call left its tool's queue after {@code nanos}. */
  public void waited(String tool, long nanos) {
    timer(QUEUE_WAIT, tool, "Time MCP calls waited in their tool's queue")
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** An admitted call ended after holding its permit {@code nanos}. */
  public void served(String tool, long nanos) {
    timer(SERVICE, tool, "Time admitted MCP calls held their permit")
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** A call of {@code tool} started ({@code +1}) or ended ({@code -1}) on this replica. */
  public void inFlight(String tool, int delta) {
    AtomicLong n =
        inFlight.computeIfAbsent(
            tool,
            t -> {
              AtomicLong v = new AtomicLong();
              Gauge.builder(IN_FLIGHT, v, AtomicLong::get)
                  .tag("tool", t)
                  .description("MCP calls in flight on this replica")
                  .register(registry);
              return v;
            });
    n.updateAndGet(v -> Math.max(0, v + delta));
  }

  /** The tool's cap (its pool's {@code maxRequests}; 0: none). */
  public void limit(String tool, long cap) {
    gauge(limits, LIMIT, tool, "The cap of an MCP tool's pool").set(cap);
  }

  /** The tool's queue depth (its pool's {@code queueDepth}; 0: no pool bound). */
  public void queueLimit(String tool, long depth) {
    gauge(queueLimits, QUEUE_LIMIT, tool, "The queue depth of an MCP tool's pool").set(depth);
  }

  private AtomicLong gauge(
      ConcurrentMap<String, AtomicLong> values, String name, String tool, String description) {
    return values.computeIfAbsent(
        tool,
        t -> {
          AtomicLong v = new AtomicLong();
          Gauge.builder(name, v, AtomicLong::get)
              .tag("tool", t)
              .description(description)
              .register(registry);
          return v;
        });
  }

  private Timer timer(String name, String tool, String description) {
    return timers.computeIfAbsent(
        name + '\0' + tool,
        k ->
            Timer.builder(name)
                .tag("tool", tool)
                .description(description)
                .serviceLevelObjectives(BUCKETS)
                .register(registry));
  }
}
