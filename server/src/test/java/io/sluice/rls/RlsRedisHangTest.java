package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import io.sluice.store.redis.RedisPorts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Redis that hangs (SIGSTOP: the connection stays open, every command waits for its timeout),
 * mid-load, then comes back (SIGCONT). Calls keep being answered in about the command timeout, each
 * limit by its failure mode (open / closed / local), counted; after SIGCONT Redis decides again by
 * itself. The same for the ext_proc tenant buckets on the Redis store. The redis-server is this
 * test's own, on a free port, and is resumed and killed in every case.
 */
class RlsRedisHangTest {
  /**
   * REDIS_COMMAND_TIMEOUT of the test's stores: 200 ms by default, so that a healthy command on a
   * loaded CI machine never overruns it (at 50 ms one did, and the healthy phase failed); {@code
   * -Dsluice.test.hangTimeoutMs=50} reproduces the figures in docs/ratelimit.md.
   */
  static final long TIMEOUT_MS = Long.getLong("sluice.test.hangTimeoutMs", 200);

  @TempDir Path root;
  RedisProcess redis;
  RlsModule module;
  final List<AutoCloseable> stores = new ArrayList<>();
  RedisPorts quotaStore;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @AfterEach
  void cleanUp() throws Exception {
    try {
      if (redis != null) {
        redis.resume(); // a stopped process must not outlive the test (kill works on it anyway)
      }
    } catch (Exception ignored) {
      // already gone
    } finally {
      if (module != null) {
        module.close();
      }
      for (AutoCloseable c : stores) {
        c.close();
      }
      if (quotaStore != null) {
        quotaStore.close();
      }
      if (redis != null) {
        redis.close();
      }
    }
  }

  private RlsDecision.Decided call(String key, String value, List<Long> latencies) {
    long t0 = System.nanoTime();
    RlsDecision d =
        module
            .evaluator()
            .evaluate(new RlsRequest("hang", List.of(RlsRequest.Descriptor.of(key, value)), 0))
            .toCompletableFuture()
            .orTimeout(10, TimeUnit.SECONDS)
            .join();
    latencies.add((System.nanoTime() - t0) / 1_000_000);
    return (RlsDecision.Decided) d;
  }

  private double failureMode(String mode) {
    Counter c = registry.find(RlsMetrics.STORE_FAILURE_MODE).tag("mode", mode).counter();
    return c == null ? 0 : c.count();
  }

  private double storeErrors() {
    Counter c = registry.find(RlsMetrics.STORE_ERRORS).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void sigstoppedRedis_boundedLatency_failureModesApplied_thenRecoversAfterSigcont()
      throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/hang.yaml"),
        """
        domain: hang
        descriptors:
          - key: o
            rate_limit: {unit: hour, requests_per_unit: 1000, failure_mode: open}
          - key: c
            rate_limit: {unit: hour, requests_per_unit: 1000, failure_mode: closed}
          - key: l
            rate_limit: {unit: hour, requests_per_unit: 3, failure_mode: local}
        """);
    module =
        WiredRls.create(
            Map.of(
                "RUNTIME_ROOT", root.toString(),
                "RUNTIME_WATCH_ROOT", "false",
                "SLUICE_RLS_CONFIG_POLL_INTERVAL", "0",
                "BACKEND_TYPE", "redis",
                "REDIS_URL", "127.0.0.1:" + redis.port(),
                "REDIS_COMMAND_TIMEOUT", TIMEOUT_MS + "ms",
                "EXPIRATION_JITTER_MAX_SECONDS", "0"),
            registry,
            Clock.systemUTC(),
            Ticker.system(),
            stores);
    module.ready().toCompletableFuture().get(20, TimeUnit.SECONDS);
    List<Long> healthy = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      assertThat(call("c", "before", healthy).overall()).isEqualTo(RlsDecision.Code.OK);
    }
    assertThat(storeErrors()).isZero();

    // mid-load: calls in flight when Redis stops
    List<CompletableFuture<RlsDecision>> inFlight = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      inFlight.add(
          module
              .evaluator()
              .evaluate(new RlsRequest("hang", List.of(RlsRequest.Descriptor.of("c", "mid")), 0))
              .toCompletableFuture());
    }
    long paused = System.nanoTime();
    redis.pause();
    // bounded: every call in flight is answered although Redis never will (no wall-clock bound is
    // asserted; the answers come from the command timeout and the failure mode, counted below)
    CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    long midLoad = (System.nanoTime() - paused) / 1_000_000;

    List<Long> hungOpen = new ArrayList<>();
    List<Long> hungClosed = new ArrayList<>();
    List<Long> hungLocal = new ArrayList<>();
    double openBefore = failureMode("open");
    double closedBefore = failureMode("closed");
    double localBefore = failureMode("local");
    for (int i = 0; i < 5; i++) {
      assertThat(call("o", "x", hungOpen).overall()).isEqualTo(RlsDecision.Code.OK);
      assertThat(call("c", "x", hungClosed).overall()).isEqualTo(RlsDecision.Code.OVER_LIMIT);
      // local: counted in this process against the limit (3, one replica)
      assertThat(call("l", "x", hungLocal).overall())
          .isEqualTo(i < 3 ? RlsDecision.Code.OK : RlsDecision.Code.OVER_LIMIT);
    }
    assertThat(failureMode("open") - openBefore).isEqualTo(5);
    assertThat(failureMode("closed") - closedBefore).isEqualTo(5);
    assertThat(failureMode("local") - localBefore).isEqualTo(5);
    assertThat(module.health().store().healthy()).isFalse();

    redis.resume();
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> {
              double errors = storeErrors();
              RlsDecision.Decided d = call("c", "after", new ArrayList<>());
              return d.overall() == RlsDecision.Code.OK && storeErrors() == errors;
            });
    // Redis decides again: the counter it kept while stopped is the one it counts on
    List<Long> after = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      assertThat(call("c", "after2", after).overall()).isEqualTo(RlsDecision.Code.OK);
    }
    assertThat(module.health().store().healthy()).isTrue();
    System.out.printf(
        "redis hang (REDIS_COMMAND_TIMEOUT "
            + TIMEOUT_MS
            + " ms): max latency ms: healthy %d (n=%d); 20 calls in"
            + " flight at SIGSTOP all answered after %d; hung: open %d, closed %d, local %d (n=%d"
            + " each); after SIGCONT %d (n=%d)%n",
        max(healthy),
        healthy.size(),
        midLoad,
        max(hungOpen),
        max(hungClosed),
        max(hungLocal),
        hungOpen.size(),
        max(after),
        after.size());
  }

  private static long max(List<Long> latencies) {
    return latencies.stream().mapToLong(Long::longValue).max().orElse(0);
  }

  @Test
  void sigstoppedRedis_tenantBuckets_failureModeApplied_thenRecover() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    quotaStore =
        RedisPorts.open(
            StoreEnv.redis(
                Map.of(
                    "REDIS_URL",
                    "127.0.0.1:" + redis.port(),
                    "REDIS_COMMAND_TIMEOUT",
                    TIMEOUT_MS + "ms")),
            Ticker.system());
    quotaStore.keyValue().warmUp("q_", 3).toCompletableFuture().get(20, TimeUnit.SECONDS);
    TenantQuotas closed =
        new TenantQuotas(quotaStore.keyValue(), "q_", TenantQuotas.FailureMode.CLOSED);
    TenantQuotas open =
        new TenantQuotas(quotaStore.keyValue(), "q_", TenantQuotas.FailureMode.OPEN);
    Tenant acme = new Tenant("acme", new TierPolicy("pro", 1, 0, 1000, 0, 0));
    assertThat(take(closed, acme)).isEqualTo(QuotaCheck.ALLOWED);

    redis.pause();
    List<Long> hungClosed = new ArrayList<>();
    List<Long> hungOpen = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      QuotaCheck c = timed(() -> take(closed, acme), hungClosed);
      QuotaCheck o = timed(() -> take(open, acme), hungOpen);
      assertThat(c.allowed()).isFalse();
      assertThat(c.storeFailed()).isTrue();
      assertThat(c.reason()).isEqualTo(Reason.TENANT_RATE);
      assertThat(o.allowed()).isTrue();
      assertThat(o.storeFailed()).isTrue();
    }
    assertThat(quotaStore.connection().health().healthy()).isFalse();

    redis.resume();
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> !take(closed, acme).storeFailed());
    assertThat(take(closed, acme)).isEqualTo(QuotaCheck.ALLOWED);
    assertThat(quotaStore.connection().health().healthy()).isTrue();
    System.out.printf(
        "redis hang, tenant buckets (REDIS_COMMAND_TIMEOUT "
            + TIMEOUT_MS
            + " ms): max latency ms: closed %d,"
            + " open %d (n=%d each)%n",
        max(hungClosed),
        max(hungOpen),
        hungClosed.size());
  }

  private interface Take {
    QuotaCheck get() throws Exception;
  }

  private static QuotaCheck timed(Take take, List<Long> latencies) throws Exception {
    long t0 = System.nanoTime();
    QuotaCheck c = take.get();
    latencies.add((System.nanoTime() - t0) / 1_000_000);
    return c;
  }

  private static QuotaCheck take(TenantQuotas q, Tenant t) throws Exception {
    return q.takeRequest(t, System.currentTimeMillis())
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }
}
