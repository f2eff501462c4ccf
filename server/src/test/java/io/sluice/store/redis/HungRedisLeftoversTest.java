package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.retry.Attempt;
import io.sluice.core.retry.AttemptSignals;
import io.sluice.core.retry.RetryControl;
import io.sluice.core.retry.RetryKeys;
import io.sluice.core.retry.RetryPolicy;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A Redis that hangs (SIGSTOP) while Sluice asks it for in-flight claims and tenant slots: every
 * call times out client-side and Sluice answers by its failure mode, holding nothing; Redis runs
 * the queued writes when it resumes (SIGCONT). Nothing of them may be left behind: within 2 × the
 * lease after SIGCONT no claim of those operations is in Redis (a retry of each is not a duplicate)
 * and each tenant's slots in Redis are exactly the ones Sluice still holds (one each: the tenants
 * stay busy, so their contributions are renewed throughout). The redis-server is this test's own,
 * on a free 127.0.0.1 port, resumed and killed in every case; every wait is bounded.
 */
class HungRedisLeftoversTest {
  /** REDIS_COMMAND_TIMEOUT: a Redis stopped for {@link #PAUSE_MS} overruns it many times. */
  static final long TIMEOUT_MS = 200;

  /** The tenant slots' lease ({@code replicas.leaseTtl}). */
  static final long LEASE_MS = 2_000;

  /**
   * How long Redis stays stopped: many command timeouts, and shorter than the tenant keys' own
   * expiry (2 × the lease), which would otherwise drop everything, the leftovers with the rest.
   */
  static final long PAUSE_MS = 1_500;

  static final int TENANTS = 20;
  static final int CAP = 16;
  static final int OPERATIONS = 10;
  static final String NS = "hung_";
  static final String POOL = "gpu";

  RedisProcess redis;
  RedisPorts ports;
  RedisClient raw;
  StatefulRedisConnection<String, String> conn;
  ScheduledExecutorService renewals;

  @AfterEach
  void cleanUp() throws Exception {
    try {
      if (redis != null) {
        redis.resume(); // a stopped process must not outlive the test (kill works on it anyway)
      }
    } catch (Exception ignored) {
      // already gone
    } finally {
      if (renewals != null) {
        renewals.shutdownNow();
      }
      if (conn != null) {
        conn.close();
        raw.shutdown();
      }
      if (ports != null) {
        ports.close();
      }
      if (redis != null) {
        redis.close();
      }
    }
  }

  @Test
  void writesSluiceGaveUpOnWhileRedisHung_leaveNoClaimsNorSlotsBehind() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    ports =
        RedisPorts.open(
            RedisSettings.local(redis.port()).withCommandTimeout(Duration.ofMillis(TIMEOUT_MS)),
            Ticker.system());
    ports.keyValue().warmUp("t_", 3).toCompletableFuture().get(20, TimeUnit.SECONDS);
    raw = RedisClient.create("redis://127.0.0.1:" + redis.port());
    conn = raw.connect();

    TenantCaps caps = new TenantCaps(ports.slots(), NS, "replica-a", () -> LEASE_MS);
    RetryControl retries =
        new RetryControl(RetryPolicy.DEFAULTS, ports.attempts(), NS, true, System::nanoTime);
    TierPolicy standard = TierPolicy.builder("standard").maxInFlight(CAP).build();
    List<Tenant> tenants = new ArrayList<>();
    for (int i = 0; i < TENANTS; i++) {
      tenants.add(new Tenant("t" + i, standard));
    }
    // every tenant busy: one slot held throughout, renewed as the replica-shares round does
    for (Tenant t : tenants) {
      assertThat(slot(caps, t).granted()).isTrue();
    }
    renewals = Executors.newSingleThreadScheduledExecutor();
    var unused = renewals.scheduleWithFixedDelay(() -> caps.renew(), 0, 200, TimeUnit.MILLISECONDS);

    long pausedAt = System.nanoTime();
    redis.pause();
    List<CompletableFuture<TenantCaps.SlotCheck>> asked = new ArrayList<>();
    List<CompletableFuture<Attempt>> attempts = new ArrayList<>();
    try {
      for (Tenant t : tenants) {
        asked.add(caps.acquire(POOL, t, TenantQuotas.FailureMode.OPEN).toCompletableFuture());
      }
      for (int i = 0; i < OPERATIONS; i++) {
        attempts.add(
            retries
                .check(POOL, "chat", "t0", "op-" + i, AttemptSignals.NONE, 1)
                .toCompletableFuture());
      }
      CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      CompletableFuture.allOf(attempts.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      // Sluice gave up on each: failed open, holding no slot and no claim
      for (CompletableFuture<TenantCaps.SlotCheck> a : asked) {
        assertThat(a.join().storeFailed()).isTrue();
        assertThat(a.join().granted()).isFalse();
      }
      for (CompletableFuture<Attempt> a : attempts) {
        assertThat(a.join().storeFailed()).isTrue();
        assertThat(a.join().claimKey()).isNull();
      }
      long left = PAUSE_MS - (System.nanoTime() - pausedAt) / 1_000_000;
      if (left > 0) {
        Thread.sleep(left);
      }
    } finally {
      redis.resume();
    }
    long resumedAt = System.nanoTime();

    // within 2 x the lease after SIGCONT, nothing of what Sluice gave up on is left in Redis
    long deadline = resumedAt + TimeUnit.MILLISECONDS.toNanos(2 * LEASE_MS);
    int claims;
    long extraSlots;
    do {
      Thread.sleep(50);
      claims = claimsLeft();
      extraSlots = slotsBeyondHeld(caps, tenants);
    } while ((claims > 0 || extraSlots > 0) && System.nanoTime() - deadline < 0);
    long waited = (System.nanoTime() - resumedAt) / 1_000_000;
    System.out.printf(
        "hung redis (%d ms stopped, command timeout %d ms, lease %d ms): %d claims and %d slots"
            + " beyond those held left %d ms after SIGCONT%n",
        PAUSE_MS, TIMEOUT_MS, LEASE_MS, claims, extraSlots, waited);
    assertThat(new long[] {claims, extraSlots})
        .as(
            "left in Redis: claims of operations Sluice gave up on, tenant slots beyond the %d"
                + " Sluice holds",
            caps.held())
        .containsExactly(0, 0);
    // taken back, not merely expired: each late write was found and removed once
    // (sluice_store_late_writes_undone_total)
    assertThat(ports.connection().lateWritesUndone(RedisAttemptStore.STORE)).isEqualTo(OPERATIONS);
    assertThat(ports.connection().lateWritesUndone(RedisTenantSlots.STORE)).isEqualTo(TENANTS);

    // a retry of each operation is no duplicate (no 409 duplicate_operation)
    for (int i = 0; i < OPERATIONS; i++) {
      Attempt a =
          retries
              .check(POOL, "chat", "t0", "op-" + i, AttemptSignals.NONE, 1)
              .toCompletableFuture()
              .get(5, TimeUnit.SECONDS);
      assertThat(a.storeFailed()).isFalse();
      assertThat(a.duplicate()).as("op-%d", i).isEqualTo(Attempt.NONE);
      assertThat(a.claimKey()).as("op-%d claimed", i).isNotNull();
      if (a.refusal() != null) {
        assertThat(a.refusal().reason()).as("op-%d", i).isNotEqualTo(Reason.DUPLICATE_OPERATION);
      }
      retries.complete(a);
    }
    // the tenants' requests end: every slot goes back, nothing is left in Redis
    renewals.shutdownNow();
    for (Tenant t : tenants) {
      caps.release(POOL, t.id());
    }
    assertThat(caps.held()).isZero();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    long live;
    do {
      Thread.sleep(20);
      live = 0;
      for (Tenant t : tenants) {
        live += liveSlots(t.id());
      }
    } while (live > 0 && System.nanoTime() - end < 0);
    assertThat(live).as("tenant slots left in Redis once every request ended").isZero();
  }

  private static TenantCaps.SlotCheck slot(TenantCaps caps, Tenant t) throws Exception {
    return caps.acquire(POOL, t, TenantQuotas.FailureMode.OPEN)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  /** Claims ("run ...") of the operations asked for while Redis hung, read from Redis. */
  private int claimsLeft() {
    int n = 0;
    for (int i = 0; i < OPERATIONS; i++) {
      String v = conn.sync().get(RetryKeys.operation(NS, POOL, "t0", "op-" + i));
      if (v != null && v.startsWith("run ")) {
        n++;
      }
    }
    return n;
  }

  /** Per tenant, the live slots Redis counts beyond those this replica holds, summed. */
  private long slotsBeyondHeld(TenantCaps caps, List<Tenant> tenants) {
    long n = 0;
    for (Tenant t : tenants) {
      n += Math.max(0, liveSlots(t.id()) - caps.held(POOL, t.id()));
    }
    return n;
  }

  /**
   * The tenant's live slots as Redis holds them, read from its key (a hash of "expiry count" per
   * replica, or a sorted set of holders scored by expiry), expired entries not counted.
   */
  private long liveSlots(String tenant) {
    String key = RedisTenantSlots.tenantKey(NS, POOL, tenant);
    List<String> time = conn.sync().time();
    long now = Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    String type = conn.sync().type(key);
    if (type.equals("zset")) {
      return conn.sync().zcount(key, io.lettuce.core.Range.create((double) now + 1, 1e18));
    }
    if (type.equals("hash")) {
      long n = 0;
      for (String v : conn.sync().hvals(key)) {
        String[] f = v.split(" ");
        // this replica's own field counts past its expiry (the old rule): count every field
        n += Long.parseLong(f[1]);
      }
      return n;
    }
    return 0;
  }
}
