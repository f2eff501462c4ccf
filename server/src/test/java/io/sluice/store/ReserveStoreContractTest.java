package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.ReserveSnapshot;
import io.sluice.core.estimate.ReserveStore;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What every {@link ReserveStore} must do: two replicas' additions add up, a pull answers the keys
 * written since, per pool, at most {@code maxKeys} per pool; and through it a new replica's learner
 * starts from what another learned. {@link #replicaA} and {@link #replicaB} are two replicas' views
 * of one store.
 */
public abstract class ReserveStoreContractTest {
  protected static final long HOUR = 3_600_000;

  protected abstract ReserveStore replicaA();

  protected abstract ReserveStore replicaB();

  /** A key namespace of this run. */
  protected abstract String namespace();

  protected static <T> T await(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  protected static ReserveSnapshot key(String pool, String tenant, Map<String, Double> f) {
    return new ReserveSnapshot(pool, "m1", "chat", 0.9, tenant, f);
  }

  protected ReserveStore.Pull exchange(
      ReserveStore s, List<ReserveSnapshot> additions, long since, int maxKeys) throws Exception {
    return await(s.exchange(namespace(), Set.of("gpu"), additions, since, HOUR, maxKeys));
  }

  protected static ReserveSnapshot find(ReserveStore.Pull p, String tenant) {
    return p.changed().stream().filter(k -> k.tenant().equals(tenant)).findFirst().orElseThrow();
  }

  @Test
  void twoReplicasAdditions_addUp() throws Exception {
    exchange(replicaA(), List.of(key("gpu", "t", Map.of("w", 2.0, "n", 2.0, "a10", 2.0))), 0, 100);
    ReserveStore.Pull p =
        exchange(
            replicaB(),
            List.of(key("gpu", "t", Map.of("w", 3.0, "n", 3.0, "a10", 1.0, "a11", 2.0))),
            0,
            100);

    Map<String, Double> f = find(p, "t").fields();
    assertThat(f.get("w")).isCloseTo(5.0, within(0.01));
    assertThat(f.get("n")).isCloseTo(5.0, within(0.01));
    assertThat(f.get("a10")).isCloseTo(3.0, within(0.01));
    assertThat(f.get("a11")).isCloseTo(2.0, within(0.01));
    assertThat(find(exchange(replicaA(), List.of(), 0, 100), "t").fields().get("w"))
        .isCloseTo(5.0, within(0.01));
  }

  @Test
  void pull_answersTheKeysWrittenSince_ofThePoolsAsked() throws Exception {
    ReserveStore.Pull first =
        exchange(replicaA(), List.of(key("gpu", "old", Map.of("w", 1.0, "n", 1.0))), 0, 100);
    exchange(replicaA(), List.of(key("cpu", "other-pool", Map.of("w", 1.0, "n", 1.0))), 0, 100);
    exchange(
        replicaB(), List.of(key("gpu", "new", Map.of("w", 1.0, "n", 1.0))), first.nowMillis(), 100);

    ReserveStore.Pull since = exchange(replicaA(), List.of(), first.nowMillis(), 100);

    assertThat(since.changed()).extracting(ReserveSnapshot::tenant).contains("new");
    assertThat(since.changed()).extracting(ReserveSnapshot::pool).containsOnly("gpu");
    assertThat(exchange(replicaA(), List.of(), since.nowMillis() + HOUR, 100).changed()).isEmpty();
  }

  @Test
  void maxKeysPerPool_theMostRecentlyWrittenKept() throws Exception {
    for (int i = 0; i < 6; i++) {
      exchange(replicaA(), List.of(key("gpu", "t" + i, Map.of("w", 1.0, "n", 1.0))), 0, 3);
    }
    ReserveStore.Pull p = exchange(replicaB(), List.of(), 0, 3);

    assertThat(p.changed()).hasSizeLessThanOrEqualTo(3);
    assertThat(p.changed()).extracting(ReserveSnapshot::tenant).contains("t5");
  }

  /** The point of it: a new replica (or one restarted) starts from what the others learned. */
  @Test
  void aNewReplicasLearner_startsWarm() throws Exception {
    OutputReserves warm = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    for (int i = 0; i < 60; i++) {
      warm.record("gpu", "m1", "chat", "acme", 0.9, 4096, 1, 150 + (i % 10) * 10);
    }
    exchange(replicaA(), warm.takeAdditions(), 0, 100);
    long warmReserve =
        warm.reserve("gpu", "m1", "chat", "acme", 0.9, 4096, 1024, 1, 4096).outputTokens();

    OutputReserves fresh = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    assertThat(fresh.reserve("gpu", "m1", "chat", "acme", 0.9, 4096, 1024, 1, 4096).rule())
        .isEqualTo("prior");
    exchange(replicaB(), List.of(), 0, 100).changed().forEach(fresh::adopt);

    OutputReserves.Reserve got =
        fresh.reserve("gpu", "m1", "chat", "acme", 0.9, 4096, 1024, 1, 4096);
    assertThat(got.rule()).isIn("bound", "learned");
    assertThat(got.outputTokens()).isCloseTo(warmReserve, within(warmReserve / 10));
    // adopting is not learning: nothing to send back
    assertThat(fresh.takeAdditions()).isEmpty();
  }

  private static final LearnedBytesPerToken.Settings BPT =
      new LearnedBytesPerToken.Settings(true, 8.0, 8, 1.5, 16, 64, HOUR);

  private static void bytesPerToken(
      LearnedBytesPerToken l, String tenant, int answers, double ratio) {
    for (int i = 0; i < answers; i++) {
      l.learn("gpu", "m1", tenant, Math.round(6000 * ratio), 6000, 1_000_000_000L * i);
    }
  }

  /** One learned bytes-per-token replica's exchange, under its own namespace. */
  private void bytesPerTokenExchange(ReserveStore s, LearnedBytesPerToken l) throws Exception {
    await(s.exchange(namespace() + "bpt_", Set.of("gpu"), l.takeAdditions(), 0, HOUR, 100))
        .changed()
        .forEach(k -> l.adopt(k, 0));
  }

  /**
   * The learned bytes-per-token through the store: a new replica starts warm on the others' ratio,
   * and one tenant's odd bodies at one replica do not move the ratio the others hold (each tenant's
   * entry is its own; the median weighs it at most {@code warmup} answers), nor do they reach the
   * reserves' keys.
   */
  @Test
  void bytesPerToken_aNewReplicaStartsWarm_oneTenantAtOneReplicaCannotMoveIt() throws Exception {
    LearnedBytesPerToken a = new LearnedBytesPerToken(BPT);
    LearnedBytesPerToken b = new LearnedBytesPerToken(BPT);
    bytesPerToken(a, "poisoner", 400, 16.0);
    bytesPerToken(b, "honest-1", 8, 4.0);
    bytesPerToken(b, "honest-2", 8, 4.2);
    assertThat(a.bytesPerToken("gpu", "m1")).as("alone, as on one replica").isEqualTo(16.0);

    bytesPerTokenExchange(replicaA(), a);
    bytesPerTokenExchange(replicaB(), b);
    bytesPerTokenExchange(replicaA(), a);

    assertThat(a.bytesPerToken("gpu", "m1")).isBetween(3.999, 4.201);
    assertThat(b.bytesPerToken("gpu", "m1")).isBetween(3.999, 4.201);
    assertThat(b.bytesPerToken("gpu", null)).isBetween(3.999, 4.201);

    LearnedBytesPerToken fresh = new LearnedBytesPerToken(BPT);
    assertThat(fresh.poolSource("gpu")).isEqualTo(LearnedBytesPerToken.Source.PRIOR);
    bytesPerTokenExchange(replicaB(), fresh);
    assertThat(fresh.bytesPerToken("gpu", "m1")).isBetween(3.999, 4.201);
    assertThat(fresh.poolSource("gpu")).isEqualTo(LearnedBytesPerToken.Source.SHARED);
    assertThat(fresh.takeAdditions()).as("adopting is not learning").isEmpty();
    assertThat(exchange(replicaA(), List.of(), 0, 100).changed())
        .as("the reserves' keys are apart")
        .isEmpty();
  }
}
