package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three Sluice servers on one Redis (127.0.0.1:6379, started by CI), each behind its own emulated
 * Envoy, all in front of one upstream that counts its concurrent requests. The pool's {@code
 * maxRequests} is the upstream's real limit: offered several times that across the three replicas,
 * the upstream never sees more, while every replica keeps admitting; when one replica stops, its
 * share goes to the others.
 */
class ReplicasE2eTest {
  static final int MAX_REQUESTS = 4;

  /** One upstream for all replicas: answers after 60 ms, counts what it holds at once. */
  static final class CountingUpstream implements Upstream, AutoCloseable {
    final SimulatedLlmUpstream llm =
        SimulatedLlmUpstream.create(SimulatedLlmUpstream.Settings.instant());
    final ScheduledExecutorService delay = Executors.newSingleThreadScheduledExecutor();
    final AtomicInteger active = new AtomicInteger();
    final AtomicInteger peak = new AtomicInteger();
    final AtomicInteger served = new AtomicInteger();
    // the same for the chat route (class interactive) alone
    final AtomicInteger activeChat = new AtomicInteger();
    final AtomicInteger peakChat = new AtomicInteger();

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      peak.accumulateAndGet(active.incrementAndGet(), Math::max);
      boolean chat = request.path().startsWith(SluiceEnvoyHarness.CHAT);
      if (chat) {
        peakChat.accumulateAndGet(activeChat.incrementAndGet(), Math::max);
      }
      CompletableFuture<UpstreamResponse> out = new CompletableFuture<>();
      delay.schedule(
          () ->
              llm.send(request)
                  .whenComplete(
                      (r, e) -> {
                        active.decrementAndGet();
                        if (chat) {
                          activeChat.decrementAndGet();
                        }
                        served.incrementAndGet();
                        if (e != null) {
                          out.completeExceptionally(e);
                        } else {
                          out.complete(r);
                        }
                      }),
          60,
          TimeUnit.MILLISECONDS);
      return out;
    }

    @Override
    public void close() {
      delay.shutdownNow();
      llm.close();
    }
  }

  private final List<SluiceServer> servers = new ArrayList<>();
  private final List<EnvoyExtProcEmulator> envoys = new ArrayList<>();
  private CountingUpstream upstream;

  private String prefix;

  @BeforeEach
  void start() throws IOException {
    assumeTrue(Policy.redisReachable(), "redis-server on 127.0.0.1:6379");
    upstream = new CountingUpstream();
    startReplicas(
        policy().with("pools.gpu.maxRequests", String.valueOf(MAX_REQUESTS)).yaml(), upstream);
  }

  /** The base policy on the shared Redis under a fresh key prefix. */
  private Policy policy() {
    prefix = "sluice_e2e_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    return Policy.onRedis(prefix);
  }

  private void startReplicas(String yaml, Upstream to) throws IOException {
    for (int i = 0; i < 3; i++) {
      SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml));
      servers.add(s);
      envoys.add(
          EnvoyExtProcEmulator.connect(
              "127.0.0.1:" + s.grpcPort(), SluiceEnvoyHarness.recommendedFilter().build(), to));
    }
  }

  @AfterEach
  void stop() {
    stopReplicas();
    if (upstream != null) {
      upstream.close();
    }
  }

  private void stopReplicas() {
    envoys.forEach(EnvoyExtProcEmulator::close);
    servers.forEach(SluiceServer::close);
    envoys.clear();
    servers.clear();
  }

  /** Sends {@code perReplica} requests to each live replica, 10 ms apart; returns the results. */
  private List<List<CompletableFuture<HttpResult>>> offer(int perReplica, List<Integer> to)
      throws InterruptedException {
    List<List<CompletableFuture<HttpResult>>> out = new ArrayList<>();
    for (int i = 0; i < envoys.size(); i++) {
      out.add(new ArrayList<>());
    }
    for (int n = 0; n < perReplica; n++) {
      for (int i : to) {
        out.get(i)
            .add(
                envoys
                    .get(i)
                    .sendAsync(
                        SluiceEnvoyHarness.chat(SluiceEnvoyHarness.chatBody(20, false)).build()));
      }
      Thread.sleep(10);
    }
    return out;
  }

  private static long admitted(List<CompletableFuture<HttpResult>> results) {
    return results.stream().map(SluiceEnvoyHarness::result).filter(r -> r.status() == 200).count();
  }

  private void assertNothingLeft() {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              for (SluiceServer s : servers) {
                var p = s.runtime().controller().pool("gpu").snapshot(0);
                assertThat(p.requestsInFlight()).isZero();
                assertThat(p.workInFlight()).isZero();
              }
            });
  }

  @Test
  void threeReplicasOverload_upstreamNeverAboveMaxRequests_everyReplicaAdmits() throws Exception {
    for (SluiceServer s : servers) {
      assertThat(s.replicaShares().get("gpu").mode()).isEqualTo(ShareCoordinator.Mode.LEASED);
    }
    // ~300 requests/s offered against a pool that serves about 4 per 60 ms (~65/s)
    var results = offer(100, List.of(0, 1, 2));
    long total = 0;
    for (int i = 0; i < 3; i++) {
      long ok = admitted(results.get(i));
      assertThat(ok).as("replica %d kept admitting", i).isGreaterThanOrEqualTo(5);
      total += ok;
    }
    assertThat(upstream.peak.get())
        .as("the upstream's peak concurrency (pool maxRequests %d)", MAX_REQUESTS)
        .isLessThanOrEqualTo(MAX_REQUESTS);
    assertThat(total).isEqualTo(upstream.served.get());
    assertNothingLeft();
    // the share metrics, as docs/metrics.md names them
    String scrape = servers.get(0).registry().scrape();
    for (String name :
        List.of(
            "sluice_replica_share_work_units{pool=\"gpu\"}",
            "sluice_replica_share_requests{pool=\"gpu\"}",
            "sluice_replica_share_demand_work_units{pool=\"gpu\"}",
            "sluice_replica_share_demand_requests{pool=\"gpu\"}",
            "sluice_replica_share_seconds_since_grant{pool=\"gpu\"}",
            "sluice_replica_share_peers{pool=\"gpu\"} 2",
            "sluice_replica_share_mode{mode=\"leased\",pool=\"gpu\"} 1",
            "sluice_replica_share_renewals_total{pool=\"gpu\",result=\"ok\"}",
            "sluice_replica_share_rebalances_total{pool=\"gpu\"}")) {
      assertThat(scrape).contains(name);
    }
    // the shares granted never add up to more than the pool
    long granted =
        servers.stream().mapToLong(s -> s.replicaShares().get("gpu").grantedRequests()).sum();
    assertThat(granted).isLessThanOrEqualTo(MAX_REQUESTS);
  }

  /**
   * Classes across replicas (issue 15): batch floods replica 0, then an interactive burst arrives
   * on replica 1 alone. Interactive is guaranteed 80 % of the pool (3 of its 4 request slots) and
   * reaches those 3 slots at the upstream although replica 0 had held the pool's slots with batch:
   * the guarantee is the pool's, and replica 1's share follows interactive's demand. The pool's cap
   * holds throughout.
   */
  @Test
  void anInteractiveBurstOnOneReplicaGetsInteractivesGuaranteeWhileBatchFloodsAnother()
      throws Exception {
    CompletableFuture<List<CompletableFuture<HttpResult>>> batch =
        CompletableFuture.supplyAsync(
            () -> {
              List<CompletableFuture<HttpResult>> out = new ArrayList<>();
              try {
                for (int n = 0; n < 250; n++) {
                  out.add(
                      envoys
                          .get(0)
                          .sendAsync(
                              HttpRequest.post(
                                      "/v1/completions",
                                      "{\"model\":\"gpt-4o\",\"prompt\":\"hi\",\"max_tokens\":5}")
                                  .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                                  .build()));
                  Thread.sleep(10);
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return out;
            });
    Thread.sleep(500);
    var interactive = offer(150, List.of(1));
    List<CompletableFuture<HttpResult>> batchResults = batch.get(30, TimeUnit.SECONDS);
    assertThat(admitted(batchResults)).as("batch kept running on replica 0").isPositive();
    assertThat(admitted(interactive.get(1))).isPositive();
    assertThat(upstream.peakChat.get())
        .as(
            "interactive's guarantee of the pool (3 of %d slots), reached from replica 1",
            MAX_REQUESTS)
        .isGreaterThanOrEqualTo(3);
    assertThat(upstream.peak.get()).isLessThanOrEqualTo(MAX_REQUESTS);
    assertNothingLeft();
  }

  /** {@link #offer} on a thread of its own, so the test can watch the shares under load. */
  private CompletableFuture<List<List<CompletableFuture<HttpResult>>>> offerInBackground(
      int perReplica, List<Integer> to) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return offer(perReplica, to);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
          }
        });
  }

  @Test
  void oneBusyReplicaGetsThePool_andAStoppedReplicasShareReturns() throws Exception {
    // load on replica 0 only: within about a second it holds every slot (2 % of 4 slots rounds
    // down to no floor for the idle replicas)
    var load = offerInBackground(300, List.of(0));
    await()
        .atMost(Duration.ofSeconds(3))
        .untilAsserted(
            () ->
                assertThat(servers.get(0).replicaShares().get("gpu").grantedRequests())
                    .isEqualTo(MAX_REQUESTS));
    assertThat(admitted(load.get(30, TimeUnit.SECONDS).get(0))).isGreaterThan(10);
    assertThat(upstream.peak.get()).isLessThanOrEqualTo(MAX_REQUESTS);
    // replica 0 stops and gives up its leases: load on replica 1 gets the whole pool
    envoys.remove(0).close();
    servers.remove(0).close();
    load = offerInBackground(300, List.of(0)); // replica 1 is index 0 now
    await()
        .atMost(Duration.ofSeconds(3))
        .untilAsserted(
            () ->
                assertThat(servers.get(0).replicaShares().get("gpu").grantedRequests())
                    .isEqualTo(MAX_REQUESTS));
    assertThat(admitted(load.get(30, TimeUnit.SECONDS).get(0))).isGreaterThan(10);
    assertThat(upstream.peak.get()).isLessThanOrEqualTo(MAX_REQUESTS);
    assertNothingLeft();
  }

  @Test
  void tenantCapHoldsAcrossReplicas_atMostMaxInFlightReachTheUpstream_slotsAllReturn()
      throws Exception {
    stopReplicas();
    // tier free: maxInFlight 2 for bob across the three replicas; a pool large enough that every
    // replica's share admits at once (the only limit in play is the tenant's)
    ControlledUpstream held = new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    try {
      // a generous command timeout: on a loaded machine a timed-out acquire would fail open
      startReplicas(
          policy()
              .with("pools.gpu.capacity", "1000000")
              .with(
                  "rateLimit.env",
                  "{BACKEND_TYPE: redis, REDIS_URL: \"127.0.0.1:6379\", REDIS_COMMAND_TIMEOUT: 2s}")
              .yaml(),
          held);
      // every replica's share admits a few requests (right after a start the others may still
      // hold the whole pool for a renewal or two)
      await()
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () -> {
                for (SluiceServer s : servers) {
                  assertThat(s.replicaShares().get("gpu").grantedWork()).isGreaterThan(10_000);
                }
              });
      HttpRequest bob =
          HttpRequest.post(SluiceEnvoyHarness.CHAT, SluiceEnvoyHarness.chatBody(10, false))
              .routeGrpcInitialMetadata("x-sluice-tenant", "bob")
              .build();
      List<CompletableFuture<HttpResult>> sent = new ArrayList<>();
      for (int n = 0; n < 2; n++) {
        for (EnvoyExtProcEmulator e : envoys) {
          sent.add(e.sendAsync(bob));
        }
      }
      // every refusal answers at once; the admitted ones wait at the upstream
      try {
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> sent.stream().filter(CompletableFuture::isDone).count() == 4);
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        StringBuilder why = new StringBuilder("upstream saw " + held.received().size() + "; ");
        for (CompletableFuture<HttpResult> f : sent) {
          why.append(
                  f.isDone()
                      ? f.join().status() + " " + f.join().header("x-sluice-reason")
                      : "pending")
              .append("; ");
        }
        for (SluiceServer s : servers) {
          s.registry()
              .scrape()
              .lines()
              .filter(l -> l.contains("tenant_slots") || l.contains("quota_store"))
              .forEach(l -> why.append(l).append('\n'));
        }
        throw new AssertionError(why.toString(), e);
      }
      assertThat(held.received()).as("at most maxInFlight reach the upstream").hasSize(2);
      List<HttpResult> refused =
          sent.stream().filter(CompletableFuture::isDone).map(SluiceEnvoyHarness::result).toList();
      for (HttpResult r : refused) {
        assertThat(r.status()).isEqualTo(429);
        assertThat(r.header("x-sluice-reason")).contains("tenant_concurrency");
        assertThat(r.upstreamRequest()).isEmpty();
      }
      String key = prefix + "{gpu}:tenant:bob";
      try (RedisProbe redis = new RedisProbe()) {
        assertThat(redis.slots(key)).as("the store counts the two held").isEqualTo(2);
        long denied = 0;
        for (SluiceServer s : servers) {
          String scrape = s.registry().scrape();
          assertThat(scrape).contains("sluice_tenant_slots_held");
          denied +=
              scrapeValue(scrape, "sluice_tenant_slots_total{pool=\"gpu\",result=\"denied\"}");
        }
        held.releaseHeld();
        assertThat(
                sent.stream()
                    .map(SluiceEnvoyHarness::result)
                    .filter(r -> r.status() == 200)
                    .count())
            .isEqualTo(2);
        assertNothingLeft();
        // every slot went back: the tenant's set is gone
        await().atMost(Duration.ofSeconds(10)).until(() -> redis.slots(key) == 0);
        // each replica's own check never refused (its load stays below 2): the store denied all
        // four
        assertThat(denied).isEqualTo(4);
      }
    } finally {
      stopReplicas();
      held.close();
    }
  }

  private static long scrapeValue(String scrape, String series) {
    for (String line : scrape.split("\n")) {
      if (line.startsWith(series + " ")) {
        return (long) Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    return 0;
  }

  /** A plain Redis connection to read the tenant's slots. */
  private static final class RedisProbe implements AutoCloseable {
    final io.lettuce.core.RedisClient client =
        io.lettuce.core.RedisClient.create("redis://127.0.0.1:6379");
    final io.lettuce.core.api.StatefulRedisConnection<String, String> conn = client.connect();

    /** The tenant's slots held: one holder per slot in its sorted set (tenant_slots.lua). */
    long slots(String key) {
      return conn.sync().zcard(key);
    }

    @Override
    public void close() {
      conn.close();
      client.shutdown();
    }
  }

  @Test
  void aCrashedReplicasShareReturnsOnlyAfterItsLeaseExpires() throws Exception {
    // load on replica 0 only: it holds every slot
    var load = offerInBackground(300, List.of(0));
    await()
        .atMost(Duration.ofSeconds(3))
        .untilAsserted(
            () ->
                assertThat(servers.get(0).replicaShares().get("gpu").grantedRequests())
                    .isEqualTo(MAX_REQUESTS));
    load.get(30, TimeUnit.SECONDS);
    // replica 0 crashes (no drain, no leave): its lease (2 s here) still counts on the store
    envoys.remove(0).close();
    SluiceServer crashed = servers.remove(0);
    crashed.halt();
    long crashedAt = System.nanoTime();
    load = offerInBackground(300, List.of(0)); // replica 1 is index 0 now
    Thread.sleep(1000);
    assertThat(servers.get(0).replicaShares().get("gpu").grantedRequests())
        .as("within the crashed replica's lease, the pool is still held by it")
        .isLessThan(MAX_REQUESTS);
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(servers.get(0).replicaShares().get("gpu").grantedRequests())
                    .isEqualTo(MAX_REQUESTS));
    assertThat(Duration.ofNanos(System.nanoTime() - crashedAt))
        .as("returned after the lease TTL")
        .isGreaterThanOrEqualTo(Duration.ofMillis(1500));
    assertThat(admitted(load.get(30, TimeUnit.SECONDS).get(0))).isGreaterThan(10);
    assertThat(upstream.peak.get()).isLessThanOrEqualTo(MAX_REQUESTS);
    assertNothingLeft();
    var p = crashed.runtime().controller().pool("gpu").snapshot(0);
    assertThat(p.requestsInFlight()).as("the crashed replica's own pool").isZero();
    crashed.close(); // a no-op after halt
  }
}
