package io.sluice.bench;

import io.sluice.bootstrap.replay.Replays;
import io.sluice.config.ConfigLoader;
import java.io.BufferedWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code replay-scale} bench: streams a day of synthetic decision records (100 req/s, 8.64 M
 * lines) to a file, then replays them against their policy in this process, sampling the heap:
 * time, records per second and the heap after each collection (flat when the replay streams).
 *
 * <pre>java -Xmx256m -jar bench/target/sluice-bench.jar replay-scale [--seconds 86400]</pre>
 */
@Command(
    name = "replay-scale",
    description =
        "Replay at scale: a day of synthetic records at 100 req/s (8.64 M) streamed to a file and"
            + " replayed; prints the time and the heap sampled during the replay (run it with"
            + " -Xmx256m to show the heap is bounded).")
final class ReplayScale implements Callable<Integer> {
  static final String POLICY =
      """
      pools: {llm: {capacity: 1000000000, maxRequests: 400, maxMessageTimeout: 30s}}
      classes:
        interactive: {rank: 0, reservedShare: 0.7, borrow: true, deadline: 8s, maxQueueWait: 2s,
                      defaultOutputTokens: 256, maxOutputTokens: 4096}
        batch: {rank: 1, reservedShare: 0.3, borrow: true, deadline: 60s, maxQueueWait: 30s,
                defaultOutputTokens: 512, maxOutputTokens: 4096}
      tiers: {standard: {weight: 1, maxInFlight: 0}}
      tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: llm, class: interactive}]
      """;

  @Option(
      names = "--seconds",
      defaultValue = "86400",
      description = "seconds of arrivals (default: ${DEFAULT-VALUE}, a day)")
  long seconds = 86_400;

  @Option(
      names = "--rate",
      defaultValue = "100",
      description = "arrivals per second (default: ${DEFAULT-VALUE})")
  double rate = 100;

  @Option(
      names = "--out",
      defaultValue = "bench-results/replay",
      description = "directory for the records file (default: ${DEFAULT-VALUE})")
  Path out = Path.of("bench-results", "replay");

  @Option(names = "--keep", description = "keep the records file (default: deleted)")
  boolean keep;

  @Option(
      names = "--budget",
      defaultValue = "PT10M",
      description =
          "the replay's stated time for a day of records, scaled to --seconds (default:"
              + " ${DEFAULT-VALUE}); exit 1 when the replay's CPU time passes it")
  java.time.Duration budget = java.time.Duration.ofMinutes(10);

  @Override
  public Integer call() throws Exception {
    Files.createDirectories(out);
    Path file = out.resolve("scale-records.jsonl");
    long t0 = System.nanoTime();
    long n = generate(file, seconds, rate, 7);
    double genSeconds = (System.nanoTime() - t0) / 1e9;
    System.out.printf(
        Locale.ROOT,
        "generated %d records (%.2f GB) in %.0f s%n",
        n,
        Files.size(file) / 1e9,
        genSeconds);
    List<String> samples = new ArrayList<>();
    System.gc();
    ManagementFactory.getMemoryPoolMXBeans().forEach(MemoryPoolMXBean::resetPeakUsage);
    java.util.concurrent.atomic.AtomicLong liveMax = new java.util.concurrent.atomic.AtomicLong();
    Thread sampler = sampler(samples, liveMax);
    long t1 = System.nanoTime();
    long t1cpu = cpuNanos();
    Replays.Result r;
    try {
      r = Replays.run(List.of(file), ConfigLoader.parse(POLICY), 400);
    } finally {
      sampler.interrupt();
      sampler.join(5000);
      if (!keep) {
        Files.deleteIfExists(file);
      }
    }
    double replaySeconds = (System.nanoTime() - t1) / 1e9;
    long peak = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        peak += p.getPeakUsage().getUsed();
      }
    }
    samples.forEach(System.out::println);
    System.out.printf(
        Locale.ROOT,
        "replayed %d records in %.0f s (%.0f records/s, %.2f s of CPU per 100 k), peak heap %d"
            + " MiB (live after GC at most %d MiB) of %d MiB, load average %.1f;"
            + " agreement %.1f %%, goodput recorded %d, replayed %d%n",
        r.replayed(),
        replaySeconds,
        r.replayed() / replaySeconds,
        cpuSeconds(t1cpu) * 100_000.0 / Math.max(1, r.replayed()),
        peak >> 20,
        liveMax.get() >> 20,
        Runtime.getRuntime().maxMemory() >> 20,
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
        100 * r.agreement(),
        r.recordedGoodput(),
        r.goodput());
    // the budget is for a day at this rate: a shorter run gets its share; CPU time, which the
    // machine's load does not stretch as it does the wall time
    double allowed = budget.toNanos() / 1e9 * seconds / 86_400.0;
    double cpu = cpuSeconds(t1cpu);
    boolean within = cpu <= allowed;
    System.out.printf(
        Locale.ROOT,
        "budget: %.0f s of CPU for %d records (%s for a day, scaled); used %.0f s: %s;"
            + " a day extrapolates to %.0f s of CPU%n",
        allowed,
        r.replayed(),
        budget,
        cpu,
        within ? "within" : "OVER",
        cpu * 86_400.0 / Math.max(1, seconds));
    return within ? 0 : 1;
  }

  /** CPU time of this thread (the replay is single-threaded). */
  private static long cpuNanos() {
    return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
  }

  private static double cpuSeconds(long since) {
    return (cpuNanos() - since) / 1e9;
  }

  /**
   * Every 10 s: elapsed, heap used now, and the old generation after its last collection (its
   * largest kept in {@code liveMax}: what the replay holds, without garbage).
   */
  static Thread sampler(List<String> samples, java.util.concurrent.atomic.AtomicLong liveMax) {
    long start = System.nanoTime();
    Thread t =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                long used = 0;
                long afterGc = 0;
                for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
                  if (p.getType() == MemoryType.HEAP) {
                    used += p.getUsage().getUsed();
                    if (p.getCollectionUsage() != null && p.getName().contains("Old")) {
                      afterGc += p.getCollectionUsage().getUsed();
                    }
                  }
                }
                liveMax.accumulateAndGet(afterGc, Math::max);
                synchronized (samples) {
                  samples.add(
                      String.format(
                          Locale.ROOT,
                          "heap at %4.0f s: used %4d MiB, old generation after its last GC %4d"
                              + " MiB",
                          (System.nanoTime() - start) / 1e9,
                          used >> 20,
                          afterGc >> 20));
                }
                try {
                  Thread.sleep(10_000);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "replay-heap");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /**
   * Writes {@code seconds * rate} records in arrival order to {@code file}, streaming: Poisson
   * arrivals, 70 % interactive (0.5-3 s of service) and 30 % batch (2-12 s), four tenants, 2 %
   * cancelled, 1 % upstream errors, each with its {@code timing}. The service times make the
   * recorded concurrency about 330 at 100 req/s, below the policy's maxRequests (400) but with
   * bursts that queue.
   */
  static long generate(Path file, long seconds, double rate, long seed) throws Exception {
    SplittableRandom rnd = new SplittableRandom(seed);
    long startMs = 1_800_000_000_000L;
    long total = (long) (seconds * rate);
    double t = 0;
    String[] tenants = {"acme", "globex", "initech", "umbrella"};
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (long i = 0; i < total; i++) {
        t += -Math.log(1 - rnd.nextDouble()) / rate;
        boolean batch = rnd.nextDouble() < 0.3;
        long service = batch ? 2000 + rnd.nextLong(10_000) : 500 + rnd.nextLong(2500);
        double roll = rnd.nextDouble();
        String outcome =
            roll < 0.02 ? "OUTCOME_CANCELLED" : roll < 0.03 ? "OUTCOME_ERROR" : "OUTCOME_COMPLETED";
        long ended = outcome.equals("OUTCOME_CANCELLED") ? service / 2 : service;
        long input = 200 + rnd.nextLong(2000);
        long output = 40 + rnd.nextLong(400);
        w.write(
            "{\"schemaVersion\":2,\"arrivalTime\":\""
                + Instant.ofEpochMilli(startMs + (long) (t * 1000))
                + "\",\"pool\":\"llm\",\"className\":\""
                + (batch ? "batch" : "interactive")
                + "\",\"tenant\":\""
                + tenants[rnd.nextInt(4)]
                + "\",\"tier\":\"standard\",\"route\":\"chat\",\"deadlineMs\":\""
                + (batch ? 60_000 : 8_000)
                + "\",\"estimate\":{\"inputTokens\":\""
                + input
                + "\",\"requestedOutputTokens\":\"512\",\"outputReserveTokens\":\"512\"},"
                + "\"decision\":\"DECISION_ADMIT\",\"actual\":{\"inputTokens\":\""
                + input
                + "\",\"outputTokens\":\""
                + output
                + "\",\"reported\":true},\"outcome\":\""
                + outcome
                + "\",\"upstreamStatus\":"
                + (outcome.equals("OUTCOME_ERROR") ? 502 : 200)
                + ",\"heldMs\":\""
                + ended
                + "\",\"serviceMs\":\""
                + ended
                + "\",\"endedAfterMs\":\""
                + ended
                + "\",\"timing\":{\"arrivalTickNs\":\""
                + (1_000_000_000_000L + (long) (t * 1e9))
                + "\",\"admittedAfterNs\":\"0\",\"endedAfterNs\":\""
                + ended * 1_000_000L
                + "\"}}\n");
      }
    }
    return total;
  }
}
