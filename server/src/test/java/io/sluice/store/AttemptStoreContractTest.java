package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.retry.AttemptStore;
import io.sluice.core.retry.AttemptStore.Observation;
import io.sluice.core.retry.AttemptStore.Observe;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * What every {@link AttemptStore} must do (issue 19). {@link #replicaA} and {@link #replicaB} are
 * two replicas' views of one store (the same object in memory; two connections to one Redis), so
 * the cross-replica parts (one claim per operation, compare-and-delete, one budget) are checked.
 */
public abstract class AttemptStoreContractTest {
  protected abstract AttemptStore replicaA();

  protected abstract AttemptStore replicaB();

  /** A key namespace of this run, with a pool hash tag. */
  protected abstract String prefix();

  private static <T> T await(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  private Observe observe(String op, String owner, boolean retryByHeaders, String budget) {
    return observe(prefix(), op, owner, retryByHeaders, budget);
  }

  /**
   * A request of the contract's policy (claims refused in flight, 60 s windows, a budget of 10
   * refilled 0.5 per original): operation {@code op} (null: none) under keys {@code prefix...}, its
   * budget bucket {@code budget} (null: none).
   */
  public static Observe observe(
      String prefix,
      @Nullable String op,
      String owner,
      boolean retryByHeaders,
      @Nullable String budget) {
    return new Observe(
        op == null ? null : prefix + "seen:" + op,
        op == null ? null : prefix + "op:" + op,
        prefix + "refused:" + (op == null ? "tenant" : op),
        budget == null ? null : prefix + "budget:" + budget,
        owner,
        retryByHeaders,
        op != null,
        true,
        false,
        false,
        60_000,
        60_000,
        10,
        0.5,
        60_000,
        0);
  }

  @Test
  void oneClaimPerOperation_acrossReplicas_andSeenCountsEveryAttempt() throws Exception {
    Observation a = await(replicaA().observe(observe("op1", "a", false, null)));
    Observation b = await(replicaB().observe(observe("op1", "b", false, null)));
    assertThat(a.seen()).isEqualTo(1);
    assertThat(a.claimed()).isTrue();
    assertThat(a.duplicate()).isEqualTo(Observation.NO_DUPLICATE);
    assertThat(b.seen()).isEqualTo(2);
    assertThat(b.claimed()).isFalse();
    assertThat(b.duplicate()).isEqualTo(Observation.IN_FLIGHT);
    assertThat(b.duplicateAgeMillis()).isBetween(0L, 5_000L);
    assertThat(a.refusalRemembered()).isFalse();
  }

  @Test
  void complete_deletesOnlyTheOwnersClaim() throws Exception {
    await(replicaA().observe(observe("op2", "a", false, null)));
    await(replicaB().complete(prefix() + "op:op2", "b", 0)); // not b's: left alone
    assertThat(await(replicaB().observe(observe("op2", "b", false, null))).duplicate())
        .isEqualTo(Observation.IN_FLIGHT);
    await(replicaA().complete(prefix() + "op:op2", "a", 0));
    Observation again = await(replicaB().observe(observe("op2", "b", false, null)));
    assertThat(again.claimed()).isTrue();
    assertThat(again.seen()).isEqualTo(3);
  }

  @Test
  void complete_withReplayWindow_leavesAMarkerThatRefusesReplays() throws Exception {
    await(replicaA().observe(observe("op3", "a", false, null)));
    await(replicaA().complete(prefix() + "op:op3", "a", 60_000));
    Observe replay =
        new Observe(
            prefix() + "seen:op3",
            prefix() + "op:op3",
            prefix() + "refused:op3",
            prefix() + "budget:r",
            "b",
            false,
            true,
            true,
            true,
            false,
            60_000,
            60_000,
            10,
            0.5,
            60_000,
            0);
    Observation r = await(replicaB().observe(replay));
    assertThat(r.duplicate()).isEqualTo(Observation.COMPLETED);
    assertThat(r.claimed()).isFalse();
    assertThat(r.budgetTokens()).isNaN(); // refused before the budget
    // replays not refused: the marker is taken over
    Observation taken = await(replicaB().observe(observe("op3", "b", false, null)));
    assertThat(taken.claimed()).isTrue();
    assertThat(taken.duplicate()).isEqualTo(Observation.NO_DUPLICATE);
  }

  @Test
  void budget_isOneBucketAcrossReplicas_gRpcArithmetic() throws Exception {
    // max 10, ratio 0.5: retries pass while > 5
    List<Double> tokens = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      AttemptStore s = i % 2 == 0 ? replicaA() : replicaB();
      Observation o = await(s.observe(observe(null, "x", true, "t1")));
      tokens.add(o.budgetTokens());
      assertThat(o.budgetAllowed()).isEqualTo(i < 5);
    }
    assertThat(tokens).containsExactly(9.0, 8.0, 7.0, 6.0, 5.0, 5.0);
    Observation original = await(replicaA().observe(observe(null, "x", false, "t1")));
    assertThat(original.budgetAllowed()).isTrue();
    assertThat(original.budgetTokens()).isEqualTo(5.5);
    Observation retry = await(replicaB().observe(observe(null, "x", true, "t1")));
    assertThat(retry.budgetAllowed()).isTrue();
    assertThat(retry.budgetTokens()).isEqualTo(4.5);
  }

  @Test
  void deferredOriginals_refillTheBucketBeforeTheRequestsOwnEffect_upToMaxTokens()
      throws Exception {
    for (int i = 0; i < 5; i++) {
      await(replicaA().observe(observe(null, "x", true, "t2"))); // 10 → 5
    }
    Observe carrying = observe(null, "x", true, "t2").withDeferredOriginals(3);
    Observation retry = await(replicaB().observe(carrying)); // 5 + 1.5 = 6.5 > 5: passes, 5.5
    assertThat(retry.budgetAllowed()).isTrue();
    assertThat(retry.budgetTokens()).isEqualTo(5.5);
    Observe many = observe(null, "x", false, "t2").withDeferredOriginals(1_000);
    assertThat(await(replicaA().observe(many)).budgetTokens())
        .as("never above max")
        .isEqualTo(10.0);
  }

  @Test
  void remember_isSeenByTheOtherReplica_withItsRetryAfterAndReason() throws Exception {
    await(replicaA().remember(prefix() + "refused:tenant", 30, "pool_saturated", 90_000));
    Observation o = await(replicaB().observe(observe(null, "x", true, null)));
    assertThat(o.refusalRemembered()).isTrue();
    assertThat(o.refusalRemainingMillis()).isBetween(25_000L, 30_000L);
    assertThat(o.refusalRetryAfterSeconds()).isEqualTo(30);
    assertThat(o.refusalReason()).isEqualTo("pool_saturated");
  }

  @Test
  void concurrentAttemptsOfOneOperation_exactlyOneClaims() throws Exception {
    List<CompletableFuture<Observation>> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      AttemptStore s = i % 2 == 0 ? replicaA() : replicaB();
      all.add(s.observe(observe("op-c", "o" + i, false, null)).toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
    assertThat(all.stream().filter(f -> f.join().claimed()).count()).isEqualTo(1);
    assertThat(all.stream().map(f -> f.join().seen()).distinct().count()).isEqualTo(40);
  }
}
