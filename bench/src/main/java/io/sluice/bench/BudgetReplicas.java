package io.sluice.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.Rig;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code budget-burst} through the servers: three Sluice replicas ({@link SluiceServer}, one
 * process) on one redis-server of the bench's own (append-only, a free port) behind the emulated
 * Envoy ({@code LEAST_REQUEST}), in front of the simulated LLM. After a warm-up that teaches the
 * learned output reserve (a tenant without a budget), 200 requests at once with {@code max_tokens}
 * 4096 from a tenant whose month's budget is sized for ~100 real answers. Runs: no outage, and
 * Redis killed (SIGKILL) for 5 s mid-run then started again, under each {@code
 * budgets.failureMode}. Measured: refusals while the recorded spend (the budget store, read through
 * {@code GET /budgets} every 100 ms) was below 90 % of the budget, the spend at the upstream
 * against the budget (overspend), the recorded spend at the end. docs/benchmarks.md, "Budgets".
 *
 * <pre>java -jar bench/target/sluice-bench.jar budget-replicas [--runs none,open,closed,local]
 * </pre>
 */
@Command(
    name = "budget-replicas",
    description =
        "budget-burst through 3 Sluice replicas on a redis-server of its own behind the emulated"
            + " Envoy: 200 requests at once (max_tokens 4096) on a budget for ~100 answers; with"
            + " Redis killed for 5 s mid-run under each budgets.failureMode.")
final class BudgetReplicas implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Upstream: 32 slots, 0.2 ms per prompt token, 10 ms per output token, 4 bytes a token. */
  static final SimulatedLlmUpstream.Settings UPSTREAM =
      new SimulatedLlmUpstream.Settings(
          32, Duration.ofNanos(200_000), Duration.ofMillis(10), 64, 4096, 4);

  /** A real answer: ~200 prompt tokens, 100–500 output tokens (300 on average). */
  static final long ANSWER = 200 + 300;

  @Option(names = "--replicas", defaultValue = "3")
  int replicas = 3;

  @Option(names = "--requests", defaultValue = "200")
  int requests = 200;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "none,open,closed,local",
      description = "none (no outage) and/or a failure mode per run (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of("none", "open", "closed", "local");

  @Option(
      names = "--outage-at",
      defaultValue = "3",
      description =
          "seconds after the burst's start when Redis is killed (default: ${DEFAULT-VALUE})")
  int outageAtSeconds = 3;

  @Option(
      names = "--outage",
      defaultValue = "5",
      description = "seconds Redis stays down (default: ${DEFAULT-VALUE})")
  int outageSeconds = 5;

  @Option(names = "--local-share", defaultValue = "0.1")
  double localShare = 0.1;

  @Option(names = "--out", defaultValue = "target/sluice-bench-budget-replicas")
  Path out = Path.of("target/sluice-bench-budget-replicas");

  /** One refusal: its status and reason, the recorded and the upstream spend when it came. */
  record Refusal(int status, String reason, long recorded, long upstream) {}

  /** What a run measured. */
  record Result(
      String run,
      long limit,
      int admitted,
      List<Refusal> refusals,
      long refusedBelow90,
      long upstreamSpent,
      long recordedFinal,
      long reservedFinal,
      long maxReservedSeen,
      long millis,
      String load) {
    double overspendPercent() {
      return Math.max(0, 100.0 * (upstreamSpent - limit) / limit);
    }
  }

  static String policy(int redisPort, String prefix, String failureMode, double share, long limit) {
    String classes =
        "  interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 120s,"
            + " maxQueueWait: 60s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";
    String base = Policies.policy(10_000_000, 64, 90_000, classes, "interactive");
    String p =
        base.replace(
            "rateLimit: {enabled: false}\n",
            "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \"127.0.0.1:"
                + redisPort
                + "\", REDIS_COMMAND_TIMEOUT: 500ms, REDIS_RECONNECT_INTERVAL: 200ms}}\n"
                + "quotas: {keyPrefix: "
                + prefix
                + "}\n");
    if (p.equals(base)) {
      throw new IllegalStateException("bench policy changed shape; update BudgetReplicas.policy");
    }
    return p
        + "estimation:\n  learnedReserve: {enabled: true, warmup: 20}\n"
        + "budgets:\n"
        + "  enabled: true\n"
        + "  maxWait: 60s\n"
        + "  failureMode: "
        + failureMode
        + "\n  localShare: "
        + share
        + "\n  tenants:\n"
        + "    acme: [{name: burst, limit: "
        + limit
        + ", period: month}]\n"
        + "    probe: [{name: probe, limit: 1000000000, period: month}]\n";
  }

  static String body(SplittableRandom r) {
    // ~800 bytes: ~200 prompt tokens at 4 bytes a token
    String text = "x".repeat(700 + r.nextInt(0, 40));
    long answer = r.nextLong(100, 501);
    return "{\"model\":\"m\",\"max_tokens\":4096,\"sim_output_tokens\":"
        + answer
        + ",\"messages\":[{\"role\":\"user\",\"content\":\""
        + text
        + "\"}]}";
  }

  static HttpRequest request(String tenant, SplittableRandom r) {
    return HttpRequest.post("/v1/chat/completions", body(r))
        .routeGrpcInitialMetadata("x-sluice-tenant", tenant)
        .build();
  }

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    if (!BudgetRedis.available()) {
      o.println("budget-replicas: no redis-server binary (the bench starts its own)");
      return 2;
    }
    List<Result> results = new ArrayList<>();
    for (String run : runs) {
      if (!List.of("none", "open", "closed", "local").contains(run)) {
        throw new IllegalArgumentException(
            "--runs: " + run + " (expected: none, open, closed, local)");
      }
      Result r = runOne(run, o);
      results.add(r);
      o.println(row(r));
    }
    String md = BudgetReplicasReport.table(results, replicas, requests, outageSeconds);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("budget-replicas.md"), md);
    return 0;
  }

  static String row(Result r) {
    return String.format(
        Locale.ROOT,
        "  %s: admitted %d, refused %d (below 90%%: %d), upstream spend %.2f%% of the budget,"
            + " recorded %.2f%%, reserved at the end %d, %d ms, load %s",
        r.run(),
        r.admitted(),
        r.refusals().size(),
        r.refusedBelow90(),
        100.0 * r.upstreamSpent() / r.limit(),
        100.0 * r.recordedFinal() / r.limit(),
        r.reservedFinal(),
        r.millis(),
        r.load());
  }

  Result runOne(String run, PrintStream o) throws Exception {
    long limit = 100 * ANSWER;
    String prefix = "sluice_bench_budget_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String mode = run.equals("none") ? "open" : run;
    List<SluiceServer> servers = new ArrayList<>();
    Rig rig = null;
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    try (BudgetRedis redis = BudgetRedis.start()) {
      String yaml = policy(redis.port(), prefix, mode, localShare, limit);
      List<String> targets = new ArrayList<>();
      for (int i = 0; i < replicas; i++) {
        SluiceServer s =
            SluiceServer.start(ConfigLoader.parse(yaml), SluiceServer.Options.defaults());
        servers.add(s);
        targets.add("127.0.0.1:" + s.grpcPort());
      }
      FilterConfig filter =
          Rig.benchFilter()
              .messageTimeout(Duration.ofSeconds(90))
              .maxMessageTimeout(Duration.ofSeconds(90))
              .build();
      rig = Rig.extProcReplicas("budget-" + run, targets, filter, UPSTREAM, Map.of());
      SplittableRandom random = new SplittableRandom(35);
      warmUp(rig, random);
      URI admin =
          URI.create(
              "http://127.0.0.1:"
                  + servers.get(0).adminPort()
                  + "/budgets?tenant=acme&tier=standard");
      long upstreamBefore = spent(rig);
      AtomicLong recorded = new AtomicLong();
      AtomicLong maxReserved = new AtomicLong();
      Thread sampler = sampler(http, admin, recorded, maxReserved);
      List<Refusal> refusals = new ArrayList<>();
      AtomicLong admitted = new AtomicLong();
      List<CompletableFuture<HttpResult>> pending = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int i = 0; i < requests; i++) {
        Rig rg = rig;
        pending.add(
            rig.sendAsync(request("acme", random))
                .whenComplete(
                    (res, err) -> {
                      if (res != null && res.status() == 200) {
                        admitted.incrementAndGet();
                        return;
                      }
                      Refusal f =
                          new Refusal(
                              res == null ? -1 : res.status(),
                              res == null
                                  ? String.valueOf(err)
                                  : res.header("x-sluice-reason").orElse("(none)"),
                              recorded.get(),
                              spent(rg) - upstreamBefore);
                      synchronized (refusals) {
                        refusals.add(f);
                      }
                    }));
      }
      if (!run.equals("none")) {
        Thread.sleep(TimeUnit.SECONDS.toMillis(outageAtSeconds));
        o.printf(
            Locale.ROOT, "  %s: Redis killed at %.1f s%n", run, (System.nanoTime() - t0) / 1e9);
        redis.kill();
        Thread.sleep(TimeUnit.SECONDS.toMillis(outageSeconds));
        redis.up();
        o.printf(Locale.ROOT, "  %s: Redis back at %.1f s%n", run, (System.nanoTime() - t0) / 1e9);
      }
      CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
          .orTimeout(3, TimeUnit.MINUTES)
          .exceptionally(e -> null)
          .join();
      long millis = (System.nanoTime() - t0) / 1_000_000;
      long burstSpent = spent(rig) - upstreamBefore;
      sampler.interrupt();
      sampler.join(2_000);
      // a round trip per replica on another budget writes back what it still owes
      for (int i = 0; i < 2 * replicas; i++) {
        rig.sendAsync(request("probe", random)).orTimeout(90, TimeUnit.SECONDS).join();
      }
      Thread.sleep(1_000);
      long[] fin = read(http, admin);
      long below90 = refusals.stream().filter(f -> f.recorded() < limit * 9 / 10).count();
      return new Result(
          run,
          limit,
          (int) admitted.get(),
          List.copyOf(refusals),
          below90,
          burstSpent,
          fin[0],
          fin[1],
          maxReserved.get(),
          millis,
          loadAverage());
    } finally {
      if (rig != null) {
        rig.close();
      }
      servers.forEach(SluiceServer::close);
    }
  }

  /** Teaches every replica the learned reserve: 90 answers of a tenant without a budget. */
  static void warmUp(Rig rig, SplittableRandom r) {
    for (int round = 0; round < 9; round++) {
      List<CompletableFuture<HttpResult>> batch = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        batch.add(rig.sendAsync(request("warm", r)));
      }
      CompletableFuture.allOf(batch.toArray(CompletableFuture[]::new))
          .orTimeout(60, TimeUnit.SECONDS)
          .exceptionally(e -> null)
          .join();
    }
  }

  static long spent(Rig rig) {
    return rig.upstream().promptTokensSpent() + rig.upstream().completionTokensSpent();
  }

  /** {spent, reserved} of the budget through the admin port; {-1, -1} when the store fails. */
  static long[] read(HttpClient http, URI admin) {
    try {
      HttpResponse<String> res =
          http.send(
              java.net.http.HttpRequest.newBuilder(admin).timeout(Duration.ofSeconds(2)).build(),
              HttpResponse.BodyHandlers.ofString());
      JsonNode b = JSON.readTree(res.body()).path("budgets").path(0);
      if (!b.has("spent")) {
        return new long[] {-1, -1};
      }
      return new long[] {b.path("spent").asLong(), b.path("reserved").asLong()};
    } catch (java.io.IOException e) {
      return new long[] {-1, -1};
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new long[] {-1, -1};
    }
  }

  static Thread sampler(HttpClient http, URI admin, AtomicLong recorded, AtomicLong maxReserved) {
    Thread t =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                long[] s = read(http, admin);
                if (s[0] >= 0) {
                  recorded.set(s[0]);
                  maxReserved.accumulateAndGet(s[1], Math::max);
                }
                try {
                  Thread.sleep(100);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "budget-sampler");
    t.setDaemon(true);
    t.start();
    return t;
  }

  static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (java.io.IOException e) {
      return "?";
    }
  }

  /** Refusals by reason. */
  static Map<String, Integer> byReason(List<Refusal> refusals) {
    Map<String, Integer> m = new TreeMap<>();
    for (Refusal f : refusals) {
      m.merge(f.status() + " " + f.reason(), 1, Integer::sum);
    }
    return m;
  }
}
