package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.quota.WorkflowPlaces;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link WorkflowPlaces} must show: one workflow's {@code maxRequests} and
 * {@code maxWork} across two replicas, the places of a replica that stopped renewing expiring on
 * the store's clock, a release never below zero, renewal keeping a place alive, and atomicity under
 * concurrent acquires. Subclasses provide the store and read back each replica's places.
 */
public abstract class WorkflowPlacesContractTest {
  protected static final long LONG_TTL = 60_000;

  protected abstract WorkflowPlaces store();

  /** Each replica's places of workflow "run-1" of pool "p" as the store holds them. */
  protected abstract Map<String, Long> contributions(String ns);

  protected WorkflowPlaces.PlaceAnswer acquire(
      String ns, String replica, long work, int maxRequests, long maxWork, long ttl)
      throws Exception {
    return store()
        .acquire(ns, "p", "run-1", replica, work, maxRequests, maxWork, ttl)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  protected void release(String ns, String replica, long work) throws Exception {
    store()
        .release(ns, "p", "run-1", replica, work, LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  @Test
  void maxRequestsHoldsAcrossTwoReplicas_andAReleaseFreesAPlaceForEither() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 10, 2, 0, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 10, 2, 0, LONG_TTL).granted()).isTrue();
    WorkflowPlaces.PlaceAnswer full = acquire(ns, "a", 10, 2, 0, LONG_TTL);
    assertThat(full.granted()).isFalse();
    assertThat(full.requests()).isEqualTo(2);
    assertThat(full.work()).isEqualTo(20);
    assertThat(contributions(ns)).containsEntry("a", 1L).containsEntry("b", 1L);
    release(ns, "b", 10);
    assertThat(acquire(ns, "a", 10, 2, 0, LONG_TTL).granted()).as("b's place went back").isTrue();
    assertThat(contributions(ns)).containsEntry("a", 2L).doesNotContainKey("b");
  }

  @Test
  void budgetOfOne_theSecondConcurrentRequestOnAnotherReplicaIsRefused() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 1, 1, 0, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 1, 1, 0, LONG_TTL).granted()).isFalse();
  }

  @Test
  void maxWorkCountsEveryReplicasWork_aFirstPlaceIsNeverRefusedForItsWork() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 500, 0, 100, LONG_TTL).granted()).as("first place").isTrue();
    assertThat(acquire(ns, "b", 1, 0, 100, LONG_TTL).granted()).isFalse();
    release(ns, "a", 500);
    assertThat(acquire(ns, "a", 60, 0, 100, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 40, 0, 100, LONG_TTL).granted()).isTrue();
    WorkflowPlaces.PlaceAnswer over = acquire(ns, "b", 1, 0, 100, LONG_TTL);
    assertThat(over.granted()).isFalse();
    assertThat(over.work()).isEqualTo(100);
  }

  @Test
  void aReleaseNeverGoesBelowZero() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    release(ns, "a", 1); // nothing held
    assertThat(contributions(ns)).isEmpty();
    assertThat(acquire(ns, "a", 1, 2, 0, LONG_TTL).granted()).isTrue();
    release(ns, "a", 1);
    release(ns, "a", 1);
    assertThat(contributions(ns)).isEmpty();
    assertThat(acquire(ns, "a", 1, 2, 0, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 1, 2, 0, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 1, 2, 0, LONG_TTL).granted()).isFalse();
  }

  @Test
  void aDeadReplicasPlacesExpireOnTheStoresClock_andComeBack() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "dead", 1, 1, 0, 300).granted()).isTrue();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    boolean granted = false;
    int refusals = 0;
    while (System.nanoTime() < deadline) {
      if (acquire(ns, "live", 1, 1, 0, LONG_TTL).granted()) {
        granted = true;
        break;
      }
      refusals++;
      Thread.sleep(20);
    }
    assertThat(granted).as("the dead replica's place expired within 10 s").isTrue();
    assertThat(refusals).as("it counted while its lease lived").isPositive();
    assertThat(contributions(ns)).containsOnlyKeys("live");
  }

  @Test
  void renewalKeepsAPlaceAlive() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 1, 1, 0, 300).granted()).isTrue();
    store()
        .renew(ns, "p", "a", Map.of("run-1", 1), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    Thread.sleep(400);
    assertThat(acquire(ns, "b", 1, 1, 0, LONG_TTL).granted()).as("a's place counts").isFalse();
  }

  @Test
  void concurrentAcquiresOfManyReplicas_neverPassTheBudget() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    List<CompletableFuture<WorkflowPlaces.PlaceAnswer>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(
          store()
              .acquire(ns, "p", "run-1", "r" + (i % 5), 1, 7, 0, LONG_TTL)
              .toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    assertThat(all.stream().filter(f -> f.join().granted()).count()).isEqualTo(7);
    assertThat(contributions(ns).values().stream().mapToLong(Long::longValue).sum()).isEqualTo(7);
  }
}
