package io.sluice.bench;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.permit.PermitDesk;
import io.sluice.core.permit.PermitEvents;
import io.sluice.core.permit.PermitLeases;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.Ticker;
import io.sluice.store.memory.InMemoryPermitLeases;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisPermitLeases;
import io.sluice.store.redis.RedisSettings;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sluice-bench permits} (docs/benchmarks.md "Permits"): the permit API's acquire, renew and
 * release latency (p50 / p99, one caller, one call at a time) on one replica's memory store and on
 * Redis with two replicas (acquired at A, renewed at B, released at A or B in turn, A's sweep
 * giving its places back), straight on {@link PermitDesk} (no gRPC); then an MCP tool pool under
 * twice the load it can take ({@link ToolPoolLoad}): two replicas on Redis behind emulated Envoys,
 * the fake tool counting its calls in flight, every answer classified.
 */
@Command(
    name = "permits",
    description =
        "Permit acquire/renew/release latency (memory, Redis 2 replicas) and an MCP tool pool"
            + " under 2x offered load (the cap pool-wide, TOOL_BACKPRESSURE answers).")
final class PermitsBench implements Callable<Integer> {
  @Option(names = "--ops", defaultValue = "5000", description = "permits per store (default 5000)")
  int ops = 5000;

  @Option(names = "--warmup", defaultValue = "2000", description = "permits first, not measured")
  int warmup = 2000;

  @Option(names = "--tool-seconds", defaultValue = "10", description = "MCP load duration (s)")
  int toolSeconds = 10;

  @Option(names = "--tool-cap", defaultValue = "4", description = "the tool pool's maxRequests")
  int toolCap = 4;

  @Option(names = "--tool-millis", defaultValue = "200", description = "the tool's service time")
  int toolMillis = 200;

  @Option(names = "--out", defaultValue = "target/sluice-bench-permits")
  Path out = Path.of("target/sluice-bench-permits");

  /** Latency of one op, in microseconds. */
  record Latency(String store, String op, long count, double p50, double p99, double max) {}

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    String loadBefore = load();
    List<Latency> rows = new ArrayList<>(memory());
    if (BudgetRedis.available()) {
      rows.addAll(redis());
    } else {
      o.println("permits: no redis-server binary: the Redis rows are left out");
    }
    ToolPoolLoad.Result tool =
        BudgetRedis.available() ? new ToolPoolLoad(toolCap, toolMillis, toolSeconds).run() : null;
    StringBuilder md = new StringBuilder();
    md.append(
        String.format(
            Locale.ROOT,
            "Load average (1, 5, 15 min) before: %s, after: %s on %d cores.%n%n",
            loadBefore,
            load(),
            Runtime.getRuntime().availableProcessors()));
    md.append("| store | op | permits | p50 µs | p99 µs | max µs |\n|---|---|---|---|---|---|\n");
    for (Latency l : rows) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %d | %.1f | %.1f | %.1f |%n",
              l.store(),
              l.op(),
              l.count(),
              l.p50(),
              l.p99(),
              l.max()));
    }
    if (tool != null) {
      md.append('\n').append(tool.table());
    }
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("permits.md"), md);
    return tool == null || tool.peak() <= toolCap ? 0 : 1;
  }

  static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg"))
          .trim()
          .replaceAll("^(\\S+ \\S+ \\S+).*", "$1");
    } catch (java.io.IOException e) {
      return String.format(
          Locale.ROOT, "%.2f", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    }
  }

  private static final ClassPolicy DB =
      ClassPolicy.builder("db")
          .rank(0)
          .shares(1.0, 0.0)
          .borrow(true)
          .deadline(Duration.ofSeconds(30))
          .maxQueueWait(Duration.ofSeconds(5))
          .outputTokens(100, 1000)
          .build();

  static PermitDesk desk(PermitLeases leases, String namespace) {
    AdmissionController pools =
        new AdmissionController(
            List.of(PoolPolicy.builder("pg", 1_000_000_000L).maxRequests(100_000).build()),
            List.of(DB),
            Duration.ofSeconds(10),
            (p, pm, oc, n) -> {},
            Math::random);
    return new PermitDesk(
        pools,
        id -> new Tenant(id, TierPolicy.builder("t").build()),
        Ticker.system(),
        Duration.ofSeconds(30).toNanos(),
        100_000,
        new PermitDesk.Shared(leases, namespace, () -> null, PermitEvents.NONE));
  }

  List<Latency> memory() {
    PermitDesk d = desk(new InMemoryPermitLeases(Ticker.system()), "bench_");
    return measure("memory, 1 replica", d, d);
  }

  List<Latency> redis() throws Exception {
    try (BudgetRedis redis = BudgetRedis.start()) {
      RedisSettings s = RedisSettings.local(redis.port()).withCommandTimeout(Duration.ofSeconds(2));
      RedisConnection ca = new RedisConnection(s, Ticker.system());
      RedisConnection cb = new RedisConnection(s, Ticker.system());
      try {
        String ns = "sluice_bench_permits_" + System.nanoTime() + "_";
        PermitDesk a = desk(new RedisPermitLeases(ca), ns);
        PermitDesk b = desk(new RedisPermitLeases(cb), ns);
        return measure("Redis, 2 replicas", a, b);
      } finally {
        ca.close();
        cb.close();
      }
    }
  }

  /** Acquire at {@code a}, renew at {@code b}, release at a or b in turn; one at a time. */
  List<Latency> measure(String store, PermitDesk a, PermitDesk b) {
    Histogram acq = new Histogram(3);
    Histogram ren = new Histogram(3);
    Histogram rel = new Histogram(3);
    for (int i = 0; i < warmup + ops; i++) {
      boolean measured = i >= warmup;
      long t0 = System.nanoTime();
      CompletableFuture<PermitDesk.Answer> got = new CompletableFuture<>();
      a.acquire(new PermitDesk.Request("pg", "acme", "db", 1, 0, ""), got::complete);
      PermitDesk.Answer p = got.orTimeout(5, TimeUnit.SECONDS).join();
      long t1 = System.nanoTime();
      if (p.kind() != PermitDesk.Answer.Kind.GRANTED) {
        throw new IllegalStateException("acquire: " + p);
      }
      PermitDesk.Answer r = b.renew(p.permitId()).toCompletableFuture().join();
      long t2 = System.nanoTime();
      PermitDesk.Answer x =
          (i % 2 == 0 ? a : b).release(p.permitId(), 1).toCompletableFuture().join();
      long t3 = System.nanoTime();
      if (r.kind() != PermitDesk.Answer.Kind.GRANTED
          || x.kind() != PermitDesk.Answer.Kind.GRANTED) {
        throw new IllegalStateException("renew/release: " + r + " " + x);
      }
      if (measured) {
        acq.recordValue(t1 - t0);
        ren.recordValue(t2 - t1);
        rel.recordValue(t3 - t2);
      }
      if (i % 500 == 0 && a != b) {
        a.expireDue().toCompletableFuture().join(); // A gives back the places released at B
      }
    }
    a.expireDue().toCompletableFuture().join();
    if (a.leases() != 0) {
      throw new IllegalStateException("permits still held at A: " + a.leases());
    }
    return List.of(
        row(store, "acquire", acq), row(store, "renew", ren), row(store, "release", rel));
  }

  static Latency row(String store, String op, Histogram h) {
    return new Latency(
        store,
        op,
        h.getTotalCount(),
        h.getValueAtPercentile(50) / 1e3,
        h.getValueAtPercentile(99) / 1e3,
        h.getMaxValue() / 1e3);
  }
}
