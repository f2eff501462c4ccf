package io.sluice.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.LoopbackRelay;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Background intake under a burst (docs/intake.md, "Prove it"): three Sluice replicas on one Redis
 * behind the emulated Envoy, in front of the simulated LLM; steady interactive traffic at {@code
 * --load} of capacity, and {@code --jobs} Responses background requests offered at {@code
 * --burst-load} of capacity from second one. Dispatched jobs come back through {@link
 * LoopbackRelay} (the loopback listener) and the emulated Envoy. A second run offers the same
 * interactive arrivals without the burst. Every run starts fresh servers on a key prefix of its
 * own: the burst meets replicas with no learned state (the "fresh start" case).
 *
 * <pre>java -jar bench/target/sluice-bench.jar intake-burst [--duration 25] [--jobs 500]</pre>
 */
@Command(
    name = "intake-burst",
    description =
        "Background intake: 3 replicas on one Redis, steady interactive traffic plus a burst of"
            + " background Responses requests at 3x capacity; ids at once, interactive goodput"
            + " with/without the burst, predicted vs actual start, lost and run twice.")
final class IntakeBurst implements Callable<Integer> {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String SECRET = "intake-burst-dispatch-secret-0123456789";
  static final int K = Scenario.UPSTREAM.batchSlots();
  static final long CAPACITY = K * Scenario.CHAT_WORK;
  static final long HOLD_MILLIS = 3_000;

  @Option(
      names = "--duration",
      defaultValue = "25",
      description = "seconds of interactive arrivals per run, 5..120 (default: ${DEFAULT-VALUE})")
  int durationSeconds = 25;

  @Option(
      names = "--load",
      defaultValue = "0.75",
      description = "interactive load, multiple of capacity (default: ${DEFAULT-VALUE})")
  double load = 0.75;

  @Option(
      names = "--jobs",
      defaultValue = "500",
      description = "background requests in the burst, 1..5000 (default: ${DEFAULT-VALUE})")
  int jobs = 500;

  @Option(
      names = "--burst-load",
      defaultValue = "3.0",
      description = "the burst's offered rate, multiple of capacity (default: ${DEFAULT-VALUE})")
  double burstLoad = 3.0;

  @Option(
      names = "--replicas",
      defaultValue = "3",
      description = "Sluice replicas, 1..5 (default: ${DEFAULT-VALUE})")
  int replicas = 3;

  @Option(
      names = "--max-wait",
      defaultValue = "90",
      description =
          "seconds to wait, after the arrivals, for the jobs to end (default: ${DEFAULT-VALUE})")
  int maxWaitSeconds = 90;

  @Option(
      names = "--redis",
      defaultValue = "127.0.0.1:6379",
      description = "the Redis the replicas share, host:port (default: ${DEFAULT-VALUE})")
  String redis = "127.0.0.1:6379";

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-intake",
      description = "directory for the markdown table (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-intake");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  @Option(
      names = "--late",
      description =
          "late mode: the burst does not ask for background mode; intake.whenLate: {batch: accept}"
              + " turns the pool's refusals (no room in time) into queued jobs")
  boolean late;

  static final String CLASSES =
      """
        interactive: {rank: 0, reservedShare: 0.8, lendableShare: 0.6, borrow: true, deadline: 8s,
                      maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}
        batch:       {rank: 1, reservedShare: 0.0, borrow: true, deadline: 10m, maxQueueWait: 2s,
                      defaultOutputTokens: 256, maxOutputTokens: 4096}
      """;

  /**
   * Every replica's policy: Redis, its run's key prefix, intake on batch, dispatch to the relay;
   * {@code late}: batch requests its pool cannot start in time are accepted too ({@code whenLate}).
   */
  static String policy(String redis, String keyPrefix, String relayUrl, boolean late) {
    String base = Policies.policy(CAPACITY, K, HOLD_MILLIS, CLASSES, "interactive");
    String p =
        base.replace(
                "rateLimit: {enabled: false}\n",
                "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \""
                    + redis
                    + "\", REDIS_COMMAND_TIMEOUT: 500ms}}\nquotas: {keyPrefix: "
                    + keyPrefix
                    + "}\n")
            .replace(
                "tenant: [{metadata: x-sluice-tenant}]",
                "tenant: [{metadata: x-sluice-tenant}, {header: x-sluice-tenant}]")
            .replace(
                "routes:\n",
                "routes:\n  - {name: responses, match: {pathPrefix: /v1/responses}, class: batch,"
                    + " format: openai-responses}\n");
    if (p.equals(base)
        || !p.contains("{header: x-sluice-tenant}")
        || !p.contains("name: responses")) {
      throw new IllegalStateException("bench policy changed shape; update IntakeBurst.policy");
    }
    return p
        + "intake:\n"
        + "  enabled: true\n"
        + "  classes: [batch]\n"
        + "  maxJobsPerTenant: 100000\n"
        + "  maxWorkPerTenant: 1000000000\n"
        + (late ? "  whenLate: {batch: accept}\n" : "")
        + "  dispatch: {url: \""
        + relayUrl
        + "\", headers: {x-sluice-tenant: tenant}, timeout: 10s, lease: 12s, maxInFlight: 8}\n";
  }

  static Workload interactive(int seconds, double multiple) {
    List<Workload.RequestClass> classes = List.of(Scenario.chat("interactive", "interactive", 1));
    double cap = Scenario.capacity(classes);
    return Workload.of(
        classes,
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1)),
        List.of(
            new Workload.Phase(
                String.format(Locale.ROOT, "%.2fx", multiple),
                Duration.ofSeconds(seconds),
                multiple * cap)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        2,
        Scenario.DEADLINE.plusSeconds(1),
        42);
  }

  /** A job's body: ~300 prompt tokens, a 48-token answer; {@code late}: no background: true. */
  static String jobBody(int i, boolean late) {
    String input = ("job " + i + " summarise the attached filing. ").repeat(30);
    return "{\"model\":\"m1\",\"input\":\""
        + input
        + "\",\"max_output_tokens\":64,\"sim_output_tokens\":48"
        + (late ? "}" : ",\"background\":true}");
  }

  /** What the client learned of one background request. */
  static final class Submitted {
    final int index;
    final long sentMillis;
    volatile int status;
    volatile long answerMicros = -1;
    volatile String id = "";
    volatile long startAfter = -1;
    volatile long startBefore = -1;
    volatile long position = -1;
    volatile long aheadWork = -1;
    volatile long expiresAt = -1;
    volatile String finalStatus = "";
    volatile String reason = "";

    Submitted(int index, long sentMillis) {
      this.index = index;
      this.sentMillis = sentMillis;
    }
  }

  /** One run's figures. */
  record Run(
      String name,
      RunReport interactive,
      List<Submitted> submitted,
      Map<String, LoopbackRelay.Job> relayed,
      long relayUnmarked,
      double lastEndSeconds,
      double capacityPerSecond,
      boolean late) {}

  @Override
  public Integer call() throws Exception {
    if (durationSeconds < 5 || durationSeconds > 120) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--duration: " + durationSeconds + " (expected: 5..120)");
    }
    if (jobs < 1 || jobs > 5000 || replicas < 1 || replicas > 5) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this),
          "--jobs/--replicas: " + jobs + "/" + replicas + " (expected: 1..5000 / 1..5)");
    }
    PrintStream o = System.out;
    if (!BenchNet.reachable(redis)) {
      o.println("intake-burst: no Redis at " + redis + " (start redis-server, or pass --redis)");
      return 1;
    }
    Workload w = interactive(durationSeconds, load);
    double cap = Scenario.capacity(w.classes());
    o.printf(
        Locale.ROOT,
        "intake-burst: simulated LLM (K=%d, capacity ~%.1f chat req/s), %d Sluice replicas on"
            + " Redis %s; interactive %.2fx for %d s; burst: %d background requests at %.1fx"
            + " from second 1 (fresh replicas: no learned rate)%s.%n",
        K,
        cap,
        replicas,
        redis,
        load,
        durationSeconds,
        jobs,
        burstLoad,
        late ? "; late mode (no background: true, whenLate: {batch: accept})" : "");
    // The burst runs first, in the colder JVM: a warm-up bias counts against it, not for it.
    o.printf(Locale.ROOT, "%n== run: with the burst ==%n");
    Run with = runOne("with the burst", w, jobs, cap, o);
    o.printf(Locale.ROOT, "%n== run: without the burst (same interactive arrivals) ==%n");
    Run without = runOne("without the burst", w, 0, cap, o);
    String md = IntakeBurstReport.report(without, with, jobs);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    IntakeBurstReport.write(out, md, with); // the table, and predicted vs actual start per job
    return IntakeBurstReport.verdicts(without, with, jobs).stream().allMatch(Verdict::pass) ? 0 : 1;
  }

  Run runOne(String name, Workload w, int burst, double cap, PrintStream o) throws Exception {
    String prefix = "sluice_bench_intake_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    List<SluiceServer> servers = new ArrayList<>();
    Rig rig = null;
    LoopbackRelay relay = null;
    try {
      List<String> targets = new ArrayList<>();
      // The relay needs the rig and the replicas need the relay's URL: bind it first.
      relay = LoopbackRelay.start(Map.of("x-sluice-class", "batch"));
      String yaml = policy(redis, prefix, relay.url(), late);
      for (int i = 0; i < replicas; i++) {
        SluiceServer s =
            SluiceServer.start(
                ConfigLoader.parse(yaml),
                new SluiceServer.Options(
                    null,
                    Map.of("SLUICE_DISPATCH_SECRET", SECRET),
                    Ticker.system(),
                    Clock.systemUTC()));
        servers.add(s);
        targets.add("127.0.0.1:" + s.grpcPort());
      }
      FilterConfig filter =
          Rig.benchFilter().maxMessageTimeout(Duration.ofMillis(HOLD_MILLIS)).build();
      rig = Rig.extProcReplicas(name, targets, filter, Scenario.UPSTREAM, Map.of());
      relay.via(rig::sendAsync);
      Rig r = rig;
      List<Submitted> submitted = new ArrayList<>();
      Thread burster = null;
      if (burst > 0) {
        burster =
            new Thread(() -> offer(r, burst, burstLoad * cap, submitted, late), "intake-burst");
        burster.setDaemon(true);
        burster.start();
      }
      LoopbackRelay rl = relay;
      RunReport report =
          new LoadGenerator(w)
              .run(
                  rig,
                  p -> {
                    if (!quiet) {
                      o.printf(
                          Locale.ROOT,
                          "  %3ds interactive offered %d completed %d | jobs relayed %d,"
                              + " answered 2xx %d | upstream active %d%n",
                          p.second(),
                          p.offered(),
                          p.completed(),
                          rl.jobs().size(),
                          rl.answered2xx(),
                          p.upstreamActive());
                    }
                  });
      if (burster != null) {
        burster.join(TimeUnit.SECONDS.toMillis(60));
      }
      long start = System.currentTimeMillis();
      double lastEnd = Double.NaN;
      if (burst > 0) {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxWaitSeconds);
        long accepted;
        synchronized (submitted) {
          accepted = submitted.stream().filter(s -> !s.id.isEmpty()).count();
        }
        readStatuses(r, submitted);
        while (!allEnded(submitted) && System.nanoTime() - until < 0) {
          Thread.sleep(2000);
          readStatuses(r, submitted);
          if (!quiet) {
            o.printf(
                Locale.ROOT,
                "  draining: jobs ended %d of %d (relay: %d answered 2xx), upstream active %d%n",
                submitted.stream().filter(s -> ended(s.finalStatus)).count(),
                accepted,
                relay.answered2xx(),
                r.upstream().active());
          }
        }
        long first = submitted.stream().mapToLong(s -> s.sentMillis).min().orElse(-1);
        long last =
            relay.jobs().values().stream()
                .mapToLong(j -> j.lastAnswerMillis.get())
                .max()
                .orElse(-1);
        lastEnd = first < 0 || last < 0 ? Double.NaN : (last - first) / 1000.0;
      }
      return new Run(
          name,
          report,
          List.copyOf(submitted),
          Map.copyOf(relay.jobs()),
          relay.unmarked(),
          lastEnd,
          cap,
          late);
    } finally {
      if (relay != null) {
        relay.close();
      }
      if (rig != null) {
        rig.close();
      }
      servers.forEach(SluiceServer::close);
    }
  }

  /** Offers {@code n} background requests at {@code perSecond}, from second one. */
  static void offer(Rig rig, int n, double perSecond, List<Submitted> submitted, boolean late) {
    String[] tenants = {"acme", "globex", "initech", "umbrella"};
    long t0 = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    List<CompletableFuture<HttpResult>> pending = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long at = t0 + (long) (i * 1e9 / perSecond);
      long wait = at - System.nanoTime();
      if (wait > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      Submitted s = new Submitted(i, System.currentTimeMillis());
      synchronized (submitted) {
        submitted.add(s);
      }
      HttpRequest req =
          HttpRequest.post("/v1/responses", jobBody(i, late))
              .routeGrpcInitialMetadata("x-sluice-tenant", tenants[i % tenants.length])
              .routeGrpcInitialMetadata("x-sluice-class", "batch")
              .build();
      long sent = System.nanoTime();
      pending.add(
          rig.sendAsync(req)
              .whenComplete(
                  (res, failure) -> {
                    s.answerMicros = (System.nanoTime() - sent) / 1000;
                    if (res != null) {
                      s.status = res.status();
                      s.reason = res.header("x-sluice-reason").orElse("");
                      if (res.status() == 200 && s.reason.equals("accepted")) { // not run now
                        parseQueued(s, res.bodyUtf8());
                      }
                    }
                  }));
    }
    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
        .orTimeout(60, TimeUnit.SECONDS)
        .exceptionally(e -> null)
        .join();
  }

  /**
   * A job's status as the status route tells it: {@code failed (code)} with its error's code; a
   * completed job is answered with the upstream's own object, its id the job's (the simulated
   * upstream answers in the chat-completions shape, with no {@code status} field).
   */
  static String statusOf(String id, JsonNode j) {
    String status = j.path("status").asText("");
    if (status.equals("failed")) {
      return "failed (" + j.path("error").path("code").asText("?") + ")";
    }
    if (status.isEmpty() && j.path("id").asText("").equals(id)) {
      return "completed";
    }
    return status;
  }

  static void parseQueued(Submitted s, String body) {
    try {
      JsonNode j = JSON.readTree(body);
      s.id = j.path("id").asText("");
      JsonNode x = j.path("sluice");
      s.startAfter = x.path("start_after").asLong(-1);
      s.startBefore = x.path("start_before").asLong(-1);
      s.position = x.path("position").asLong(-1);
      s.aheadWork = x.path("ahead_work").asLong(-1);
      s.expiresAt = x.path("expires_at").asLong(-1);
    } catch (java.io.IOException e) {
      s.id = "";
    }
  }

  static boolean ended(String status) {
    return status.equals("completed")
        || status.equals("cancelled")
        || status.equals("expired")
        || status.startsWith("failed");
  }

  static boolean allEnded(List<Submitted> submitted) {
    return submitted.stream().filter(s -> !s.id.isEmpty()).allMatch(s -> ended(s.finalStatus));
  }

  /** Reads every accepted job's final status through the status route (any replica). */
  static void readStatuses(Rig rig, List<Submitted> submitted) {
    String[] tenants = {"acme", "globex", "initech", "umbrella"};
    List<CompletableFuture<HttpResult>> reads = new ArrayList<>();
    for (Submitted s : submitted) {
      if (s.id.isEmpty()) {
        continue;
      }
      HttpRequest req =
          HttpRequest.get("/v1/responses/" + s.id)
              .routeGrpcInitialMetadata("x-sluice-tenant", tenants[s.index % tenants.length])
              .routeGrpcInitialMetadata("x-sluice-class", "batch")
              .build();
      reads.add(
          rig.sendAsync(req)
              .whenComplete(
                  (res, failure) -> {
                    if (res == null || res.status() != 200) {
                      s.finalStatus = res == null ? "no answer" : "http " + res.status();
                      return;
                    }
                    try {
                      JsonNode j = JSON.readTree(res.bodyUtf8());
                      s.finalStatus = statusOf(s.id, j);
                    } catch (java.io.IOException e) {
                      s.finalStatus = "unreadable";
                    }
                  }));
    }
    CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .orTimeout(60, TimeUnit.SECONDS)
        .exceptionally(e -> null)
        .join();
  }
}
