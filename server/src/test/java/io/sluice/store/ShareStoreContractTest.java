package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.ShareLeaseModel;
import io.sluice.core.share.ShareRace;
import io.sluice.core.share.ShareStore;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The behaviour every {@link ShareStore} must show, checked against its Java statement ({@link
 * ShareLeaseModel}): the same grants and peers for random exchanges, leases that expire on the
 * store's clock, leave, supersede, atomicity under concurrent replicas, and the pool's bound at
 * every instant for replicas whose exchanges are on the wire ({@link ShareRace}). Subclasses
 * provide the store.
 */
public abstract class ShareStoreContractTest {
  protected abstract ShareStore store();

  private static ShareStore.Grant get(ShareStore s, ShareStore.Exchange x) throws Exception {
    return s.exchange(x).toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  /** Class names a config may hold: spaces, the record's separators, non-ASCII, empty. */
  private static final String[] CLASS_NAMES = {
    "interactive", "batch job", "a:b,c", "ünïcode", "", "100%", "x+y"
  };

  /** Zero to three class loads with names from {@link #CLASS_NAMES}. */
  private static List<ClassDemand> classLoads(SplittableRandom r) {
    List<ClassDemand> out = new ArrayList<>();
    int n = r.nextInt(4);
    for (int i = 0; i < n; i++) {
      out.add(
          new ClassDemand(
              CLASS_NAMES[r.nextInt(CLASS_NAMES.length)],
              r.nextLong(0, 1L << 45),
              r.nextInt(0, 100_000),
              r.nextLong(0, 1L << 40),
              r.nextInt(0, 1000),
              r.nextLong(0, 1L << 40)));
    }
    return out;
  }

  private static List<ShareStore.Peer> sorted(List<ShareStore.Peer> peers) {
    List<ShareStore.Peer> out = new ArrayList<>(peers);
    out.sort(Comparator.comparing(ShareStore.Peer::replica));
    return out;
  }

  static LongStream seeds() {
    return LongStream.range(0, 25);
  }

  /**
   * Random exchanges of up to 4 replicas (long leases): the store answers what the model answers.
   */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_scriptAgreesWithTheModel(long seed) throws Exception {
    SplittableRandom r = new SplittableRandom(seed);
    String ns = LocalRedis.uniquePrefix();
    ShareLeaseModel model = new ShareLeaseModel(() -> 0);
    long capWork = r.nextInt(3) == 0 ? r.nextLong(0, 5) : r.nextLong(1, 1L << 40);
    int capRequests = r.nextInt(3) == 0 ? 0 : r.nextInt(1, 200);
    int replicas = r.nextInt(1, 5);
    for (int i = 0; i < 40; i++) {
      String id = "r" + r.nextInt(replicas);
      ShareStore.Exchange x =
          new ShareStore.Exchange(
              ns,
              "pool",
              id,
              60_000,
              capWork,
              capRequests,
              r.nextLong(0, capWork + 2),
              r.nextInt(0, capRequests + 2),
              r.nextInt(4) == 0 ? r.nextLong(0, capWork + 1) : 0,
              r.nextInt(4) == 0 ? r.nextInt(0, capRequests + 1) : 0,
              r.nextLong(0, 1L << 45),
              r.nextInt(0, 100_000),
              classLoads(r));
      if (r.nextInt(15) == 0) {
        store().leave(ns, "pool", id).toCompletableFuture().get(5, TimeUnit.SECONDS);
        model.leave(ns, "pool", id);
        continue;
      }
      ShareStore.Grant got = get(store(), x);
      ShareStore.Grant expected = get(model, x);
      assertThat(got.work()).as("seed %d exchange %d: work", seed, i).isEqualTo(expected.work());
      assertThat(got.requests()).isEqualTo(expected.requests());
      assertThat(sorted(got.peers())).isEqualTo(sorted(expected.peers()));
    }
  }

  private static ShareStore.Exchange ex(
      String ns,
      String replica,
      long ttl,
      long capWork,
      int capRequests,
      long work,
      int requests,
      long inUseWork) {
    return new ShareStore.Exchange(
        ns,
        "p",
        replica,
        ttl,
        capWork,
        capRequests,
        work,
        requests,
        inUseWork,
        0,
        work,
        requests,
        List.of());
  }

  @Test
  void anExpiredLeaseNoLongerCounts_andItsShareReturns() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(get(store(), ex(ns, "a", 150, 100, 8, 80, 6, 0)).work()).isEqualTo(80);
    var b = ex(ns, "b", 60_000, 100, 8, 100, 8, 0);
    ShareStore.Grant gb = get(store(), b);
    assertThat(gb.work()).as("a holds 80").isEqualTo(20);
    assertThat(gb.requests()).isEqualTo(2);
    assertThat(gb.peers()).extracting(ShareStore.Peer::replica).containsExactly("a");
    // a stops renewing: once its 150 ms lease is over (on the store's clock), b gets the pool
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!get(store(), b).peers().isEmpty()) {
      assertThat(System.nanoTime() - deadline).as("a's lease expires").isNegative();
      Thread.sleep(20);
    }
    ShareStore.Grant whole = get(store(), b);
    assertThat(whole.work()).isEqualTo(100);
    assertThat(whole.requests()).isEqualTo(8);
  }

  @Test
  void inFlightWorkIsHeldEvenWhenTheGrantShrinks_andLeaveFreesIt() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(get(store(), ex(ns, "a", 60_000, 100, 0, 90, 0, 0)).work()).isEqualTo(90);
    // a now wants 10 but still has 70 in flight: it is granted 10 and holds 70
    assertThat(get(store(), ex(ns, "a", 60_000, 100, 0, 10, 0, 70)).work()).isEqualTo(10);
    var b = ex(ns, "b", 60_000, 100, 0, 90, 0, 0);
    ShareStore.Grant gb = get(store(), b);
    assertThat(gb.work()).as("only what a does not hold").isEqualTo(30);
    assertThat(gb.peers()).singleElement().satisfies(p -> assertThat(p.heldWork()).isEqualTo(70));
    store().leave(ns, "p", "a").toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertThat(get(store(), b).work()).isEqualTo(90);
  }

  /** A container restarted in place (same pod name) frees its dead predecessor's share. */
  @Test
  void supersede_dropsEarlierIncarnationsOnly_andTheirShareReturnsAtOnce() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(get(store(), ex(ns, "pod-0#aaa", 60_000, 100, 8, 40, 3, 40)).work()).isEqualTo(40);
    assertThat(get(store(), ex(ns, "pod-01#bbb", 60_000, 100, 8, 30, 3, 0)).work()).isEqualTo(30);
    // pod-0 crashed with 40 in flight; its lease would count for another minute
    var next = ex(ns, "pod-0#ccc", 60_000, 100, 8, 70, 5, 0);
    int dropped =
        store()
            .supersede(ns, "p", "pod-0#ccc", "pod-0#")
            .toCompletableFuture()
            .get(5, TimeUnit.SECONDS);
    assertThat(dropped).isEqualTo(1);
    ShareStore.Grant g = get(store(), next);
    assertThat(g.work()).as("all the pool but pod-01's").isEqualTo(70);
    assertThat(g.peers()).extracting(ShareStore.Peer::replica).containsExactly("pod-01#bbb");
    // its own lease is kept, and a second call finds nothing to drop
    assertThat(
            store()
                .supersede(ns, "p", "pod-0#ccc", "pod-0#")
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS))
        .isZero();
    assertThat(get(store(), next).work()).isEqualTo(70);
  }

  static LongStream raceSeeds() {
    return LongStream.range(0, 16);
  }

  /**
   * {@link ShareRace} on this store: replicas that join, renew, take bursts and leave, with their
   * exchanges run and answered by the store in a seeded order; after every action the requests and
   * work in flight across the live replicas are within the pool (leases of 60 s: the store's own
   * clock never expires one during a run).
   */
  @ParameterizedTest
  @MethodSource("raceSeeds")
  void property_poolBoundAfterEveryAction_withExchangesOnTheWire(long seed) {
    ShareRace.Setup setup =
        ShareRace.setup(seed, Duration.ofSeconds(60), LocalRedis.uniquePrefix(), 1500);
    ShareRace.Result r = ShareRace.run(seed, setup, store(), new FakeTicker());
    assertThat(r.firstBreach())
        .as("seed %d, %s; the last actions:%n%s", seed, setup, String.join("\n", r.log()))
        .isEmpty();
  }

  @Test
  void concurrentReplicas_neverHoldMoreThanThePool() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    SplittableRandom r = new SplittableRandom(7);
    List<CompletableFuture<ShareStore.Grant>> all = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      all.add(
          store()
              .exchange(
                  ex(
                      ns,
                      "r" + r.nextInt(6),
                      60_000,
                      1000,
                      50,
                      r.nextLong(0, 1001),
                      r.nextInt(0, 51),
                      0))
              .toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(20, TimeUnit.SECONDS);
    for (CompletableFuture<ShareStore.Grant> g : all) {
      assertThat(g.join().work()).isBetween(0L, 1000L);
    }
    // what the replicas hold, as the store sees it, is within the pool
    ShareStore.Grant last = get(store(), ex(ns, "observer", 60_000, 1000, 50, 0, 0, 0));
    assertThat(last.peers()).hasSizeLessThanOrEqualTo(6);
    assertThat(last.peers().stream().mapToLong(ShareStore.Peer::heldWork).sum())
        .isLessThanOrEqualTo(1000);
    assertThat(last.peers().stream().mapToInt(ShareStore.Peer::heldRequests).sum())
        .isLessThanOrEqualTo(50);
  }
}
