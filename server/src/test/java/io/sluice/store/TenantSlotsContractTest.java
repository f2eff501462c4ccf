package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.quota.TenantSlots;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link TenantSlots} must show: one tenant's cap across two replicas, the
 * contribution of a replica that stopped renewing expiring on the store's clock, a release never
 * below zero, renewal keeping a contribution alive, and atomicity under concurrent acquires.
 * Subclasses provide the store and read back each replica's contribution.
 */
public abstract class TenantSlotsContractTest {
  protected static final long LONG_TTL = 60_000;

  protected abstract TenantSlots store();

  /** Each replica's slots of tenant "acme" of pool "p" as the store holds them (none: absent). */
  protected abstract Map<String, Long> contributions(String ns);

  protected TenantSlots.SlotAnswer acquire(String ns, String replica, int cap, long ttl)
      throws Exception {
    return store()
        .acquire(ns, "p", "acme", replica, cap, ttl)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  protected void release(String ns, String replica) throws Exception {
    store()
        .release(ns, "p", "acme", replica, LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  private Map<String, Long> hash(String ns) {
    return contributions(ns);
  }

  private long count(String ns, String replica) {
    return contributions(ns).getOrDefault(replica, 0L);
  }

  @Test
  void theCapHoldsAcrossTwoReplicas_andAReleaseFreesASlotForEither() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 3, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    TenantSlots.SlotAnswer full = acquire(ns, "b", 3, LONG_TTL);
    assertThat(full.granted()).isFalse();
    assertThat(full.total()).isEqualTo(3);
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isFalse();
    assertThat(count(ns, "a")).isEqualTo(2);
    assertThat(count(ns, "b")).isEqualTo(1);

    release(ns, "a");
    assertThat(acquire(ns, "b", 3, LONG_TTL).granted()).as("a's slot went back").isTrue();
    assertThat(count(ns, "b")).isEqualTo(2);
  }

  @Test
  void aReleaseNeverGoesBelowZero_andTheFieldLeavesAtZero() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    release(ns, "a"); // nothing held: no field appears
    assertThat(hash(ns)).isEmpty();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isTrue();
    release(ns, "a");
    release(ns, "a");
    release(ns, "a");
    assertThat(hash(ns)).isEmpty();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).as("not counted below zero").isTrue();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isFalse();
  }

  @Test
  void aDeadReplicasSlotsExpireOnTheStoresClock_andReturnToTheOthers() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "dead", 3, 1_000).granted()).isTrue();
    assertThat(acquire(ns, "dead", 3, 1_000).granted()).isTrue();
    // a live replica's long lease keeps the key itself alive: only the field can expire
    assertThat(acquire(ns, "other", 3, LONG_TTL).granted()).isTrue();
    // "dead" never renews; "live" is refused until its contribution expired on the store's clock.
    // Its two slots were taken at two instants and expire at two: "live" takes both back in turn.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    int granted = 0;
    int refusals = 0;
    while (granted < 2 && System.nanoTime() < deadline) {
      TenantSlots.SlotAnswer a = acquire(ns, "live", 3, LONG_TTL);
      if (a.granted()) {
        granted++;
        continue;
      }
      assertThat(a.total()).isEqualTo(3);
      refusals++;
      Thread.sleep(20);
    }
    assertThat(granted).as("both of the dead replica's slots expired within 10 s").isEqualTo(2);
    assertThat(hash(ns)).as("its field was dropped").containsOnlyKeys("other", "live");
    assertThat(count(ns, "live")).isEqualTo(2);
    assertThat(refusals).isPositive(); // it did count while its lease lived
  }

  @Test
  void renewalKeepsAContributionAlive() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 2, 300).granted()).isTrue();
    // renewed with a long lease: it outlives the 300 ms it was taken with
    store()
        .renew(ns, "p", "a", Map.of("acme", 1), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    Thread.sleep(400);
    assertThat(acquire(ns, "b", 2, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 2, LONG_TTL).granted()).as("a's slot still counts").isFalse();
    // renewing a count of 0 for a field that is gone writes nothing
    store()
        .renew(ns, "p", "c", Map.of("acme", 0), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    assertThat(hash(ns)).doesNotContainKey("c");
  }

  @Test
  void concurrentAcquiresOfManyReplicas_neverPassTheCap() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    List<CompletableFuture<TenantSlots.SlotAnswer>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(store().acquire(ns, "p", "acme", "r" + (i % 5), 7, LONG_TTL).toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    long granted = all.stream().filter(f -> f.join().granted()).count();
    assertThat(granted).isEqualTo(7);
    long sum = 0;
    for (String r : hash(ns).keySet()) {
      sum += count(ns, r);
    }
    assertThat(sum).isEqualTo(7);
  }
}
