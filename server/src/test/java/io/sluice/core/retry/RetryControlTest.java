package io.sluice.core.retry;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Reason;
import io.sluice.core.retry.RetryPolicy.Budget;
import io.sluice.core.retry.RetryPolicy.Duplicates;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Retry control on the in-process store with a fake clock: budget arithmetic (gRPC retry
 * throttling), the windows (operation seen, refusal memory, replay, idle bucket), early vs honoured
 * Retry-After, duplicates, and the store's failure modes.
 */
class RetryControlTest {
  private static final AttemptSignals NO_SIGNALS = AttemptSignals.NONE;
  private static final AttemptSignals SDK_RETRY = new AttemptSignals(1, -1, null);

  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryAttemptStore store = new InMemoryAttemptStore(ticker, 10_000);

  private static RetryPolicy policy(
      Budget budget, RetryPolicy.EarlyRetry early, Duplicates duplicates) {
    return new RetryPolicy(true, Duration.ofSeconds(60), 10_000, budget, early, duplicates);
  }

  private static final Duplicates REFUSE =
      new Duplicates(Duplicates.Action.REFUSE, Duration.ZERO, Duration.ofMinutes(10), Map.of());

  private RetryControl control(RetryPolicy p) {
    return new RetryControl(p, store, "t_", true, System::nanoTime);
  }

  private RetryControl budgetOnly(double max, double ratio) {
    return control(
        policy(
            new Budget(true, Budget.Scope.TENANT, max, ratio),
            RetryPolicy.EarlyRetry.COUNT,
            REFUSE));
  }

  private static Attempt get(CompletionStage<Attempt> s) {
    return s.toCompletableFuture().join();
  }

  private static Attempt check(RetryControl c, String tenant, String op, AttemptSignals sig) {
    return get(c.check("gpu", "chat", tenant, op, sig, 2));
  }

  @Test
  void budget_startsFull_retriesPassAboveHalf_eachCostsOne_thenRefusedWhileOriginalsPass() {
    RetryControl c = budgetOnly(10, 0.1);
    // 10 → 9 → 8 → 7 → 6 → 5: five retries pass (each needs > 5 before it), the sixth does not
    for (int i = 0; i < 5; i++) {
      Attempt a = check(c, "acme", null, SDK_RETRY);
      assertThat(a.retry()).isTrue();
      assertThat(a.refusal()).isNull();
      assertThat(a.budgetTokens()).isEqualTo(9.0 - i);
    }
    Attempt refused = check(c, "acme", null, SDK_RETRY);
    assertThat(refused.refusal()).isNotNull();
    assertThat(refused.refusal().reason()).isEqualTo(Reason.RETRY_BUDGET);
    assertThat(refused.refusal().status()).isEqualTo(429);
    assertThat(refused.refusal().retryAfterSeconds()).isEqualTo(2);
    assertThat(refused.budgetTokens()).isEqualTo(5.0); // a refusal spends nothing
    // originals are admitted and refill by tokenRatio each: ten of them lift it above 5 again
    for (int i = 0; i < 10; i++) {
      assertThat(check(c, "acme", null, NO_SIGNALS).refusal()).isNull();
    }
    Attempt again = check(c, "acme", null, SDK_RETRY);
    assertThat(again.refusal()).isNull();
    assertThat(again.budgetTokens()).isCloseTo(5.0, org.assertj.core.data.Offset.offset(1e-9));
    // another tenant's bucket is its own
    assertThat(check(c, "other", null, SDK_RETRY).refusal()).isNull();
  }

  @Test
  void budget_neverAboveMaxTokens_andPoolScopeSharesOneBucket() {
    RetryControl c =
        control(
            policy(
                new Budget(true, Budget.Scope.POOL, 4, 1), RetryPolicy.EarlyRetry.COUNT, REFUSE));
    for (int i = 0; i < 5; i++) {
      assertThat(check(c, "t" + i, null, NO_SIGNALS).budgetTokens()).isEqualTo(4.0);
    }
    assertThat(check(c, "a", null, SDK_RETRY).budgetTokens()).isEqualTo(3.0);
    assertThat(check(c, "b", null, SDK_RETRY).budgetTokens()).isEqualTo(2.0); // 3 > 2: passes
    assertThat(check(c, "c", null, SDK_RETRY).refusal().reason()).isEqualTo(Reason.RETRY_BUDGET);
  }

  /** {@link #store} as a shared store would be used: counts the calls, shows what they carry. */
  private final class Shared implements AttemptStore {
    final List<AttemptStore.Observe> calls = new ArrayList<>();

    @Override
    public CompletionStage<AttemptStore.Observation> observe(AttemptStore.Observe o) {
      calls.add(o);
      return store.observe(o);
    }

    @Override
    public CompletionStage<Void> complete(String operationKey, String owner, long replayMillis) {
      return store.complete(operationKey, owner, replayMillis);
    }

    @Override
    public CompletionStage<Void> remember(
        String refusalKey, long retryAfterSeconds, String reason, long keepMillis) {
      return store.remember(refusalKey, retryAfterSeconds, reason, keepMillis);
    }

    @Override
    public boolean shared() {
      return true;
    }
  }

  @Test
  void sharedStore_originalsAreSentOncePerInterval_andTheirRefillsArriveWithTheNextCall() {
    Shared shared = new Shared();
    RetryControl c =
        new RetryControl(
            policy(
                new Budget(true, Budget.Scope.TENANT, 10, 0.5),
                RetryPolicy.EarlyRetry.COUNT,
                REFUSE),
            shared,
            "t_",
            true,
            ticker::nanos);
    for (int i = 0; i < 4; i++) { // 10 → 6
      assertThat(check(c, "acme", null, SDK_RETRY).budgetTokens()).isEqualTo(9.0 - i);
    }
    assertThat(shared.calls).hasSize(4);

    for (int i = 0; i < 4; i++) { // held: no call, classified all the same
      Attempt a = check(c, "acme", null, NO_SIGNALS);
      assertThat(a.classified()).isTrue();
      assertThat(a.retry()).isFalse();
      assertThat(a.refusal()).isNull();
      assertThat(a.budgetTokens()).isNaN();
    }
    assertThat(shared.calls).as("originals held within the interval").hasSize(4);

    // a retry carries the four held originals: 6 + 4 × 0.5 = 8, then it spends 1
    assertThat(check(c, "acme", null, SDK_RETRY).budgetTokens()).isEqualTo(7.0);
    assertThat(shared.calls.get(4).deferredOriginals()).isEqualTo(4);

    // past the interval, the next original goes, with those held before it: 7 + 3 × 0.5
    check(c, "acme", null, NO_SIGNALS);
    check(c, "acme", null, NO_SIGNALS);
    ticker.advanceNanos(RetryControl.SEND_ORIGINALS_NANOS);
    Attempt sent = check(c, "acme", null, NO_SIGNALS);
    assertThat(shared.calls).hasSize(6);
    assertThat(shared.calls.get(5).deferredOriginals()).isEqualTo(2);
    assertThat(sent.budgetTokens()).isEqualTo(8.5);

    // an operation id always goes (claims and duplicates need the store)
    check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(shared.calls).hasSize(7);
    // the in-process store is called for every request
    RetryControl local = budgetOnly(10, 0.5);
    check(local, "acme", null, NO_SIGNALS);
    assertThat(shared.calls).hasSize(7);
  }

  @Test
  void tenantKeyCache_isBoundedPerPool_andKeepsTenantsApart() {
    RetryControl c = budgetOnly(2, 0.1);
    check(c, "acme", null, SDK_RETRY); // acme: 2 → 1
    for (int i = 0; i < RetryControl.MAX_CACHED_TENANTS + 500; i++) {
      check(c, "t" + i, null, NO_SIGNALS);
      assertThat(c.cachedTenantKeys("gpu")).isLessThanOrEqualTo(RetryControl.MAX_CACHED_TENANTS);
    }
    assertThat(check(c, "acme", null, SDK_RETRY).refusal())
        .as("acme's own bucket, found again after the cache started over")
        .isNotNull();
    assertThat(check(c, "globex", null, SDK_RETRY).refusal()).isNull();
  }

  @Test
  void budget_idleBucketExpiresAfterTheWindow_andComesBackFull() {
    RetryControl c = budgetOnly(2, 0.1);
    check(c, "acme", null, SDK_RETRY); // 2 → 1
    assertThat(check(c, "acme", null, SDK_RETRY).refusal()).isNotNull();
    ticker.advance(Duration.ofSeconds(60).minusMillis(1));
    assertThat(check(c, "acme", null, SDK_RETRY).refusal()).isNotNull(); // used: idle again
    ticker.advance(Duration.ofSeconds(60));
    assertThat(check(c, "acme", null, SDK_RETRY).refusal()).isNull();
  }

  @Test
  void operationSeenAgainWithinWindow_isRetry_whateverTheHeadersSay_slidingWindow() {
    RetryControl c = budgetOnly(10, 0.1);
    Attempt first = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(first.retry()).isFalse();
    assertThat(first.number()).isEqualTo(1);
    assertThat(first.signal()).isEqualTo(Attempt.NONE);
    c.complete(first);
    ticker.advance(Duration.ofSeconds(59));
    Attempt second =
        check(c, "acme", "op-1", new AttemptSignals(0, 1, null)); // claims to be a first try
    assertThat(second.retry()).isTrue();
    assertThat(second.number()).isEqualTo(2);
    assertThat(second.signal()).isEqualTo(Attempt.OPERATION);
    c.complete(second);
    ticker.advance(Duration.ofSeconds(59)); // 118 s after the first: the window slid
    assertThat(check(c, "acme", "op-1", NO_SIGNALS).number()).isEqualTo(3);
    ticker.advance(Duration.ofSeconds(61));
    assertThat(check(c, "acme", "op-2", NO_SIGNALS).retry()).isFalse();
    assertThat(check(c, "other", "op-1", NO_SIGNALS).retry()).isFalse(); // tenants apart
  }

  @Test
  void headers_classifyRetries_andTheirAttemptNumber() {
    RetryControl c = budgetOnly(100, 1);
    Attempt sdk = check(c, "acme", null, new AttemptSignals(3, -1, null));
    assertThat(sdk.retry()).isTrue();
    assertThat(sdk.number()).isEqualTo(4);
    assertThat(sdk.signal()).isEqualTo(Attempt.SDK);
    assertThat(sdk.previousReason()).isEqualTo(Attempt.UNKNOWN);
    Attempt envoy = check(c, "acme", null, new AttemptSignals(-1, 2, null));
    assertThat(envoy.signal()).isEqualTo(Attempt.ENVOY);
    assertThat(envoy.number()).isEqualTo(2);
    Attempt original = check(c, "acme", null, new AttemptSignals(0, 1, null));
    assertThat(original.retry()).isFalse();
    assertThat(original.previousReason()).isEqualTo(Attempt.NONE);
  }

  @Test
  void refusalMemory_earlyBeforeRetryAfter_honouredAfter_byOperationOrTenant() {
    RetryControl c = budgetOnly(100, 1);
    c.remember("gpu", "acme", "op-1", Reason.POOL_SATURATED, 5);
    ticker.advance(Duration.ofMillis(4_999));
    Attempt early = check(c, "acme", "op-1", NO_SIGNALS); // seen once before? no: a retry by memory
    // the refusal alone does not make it a retry (the operation was not seen by check before)
    assertThat(early.retry()).isFalse();
    assertThat(early.retryAfter()).isEqualTo(Attempt.NONE);
    c.complete(early);
    Attempt retry = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(retry.retry()).isTrue();
    assertThat(retry.retryAfter()).isEqualTo(Attempt.EARLY);
    assertThat(retry.previousReason()).isEqualTo("pool_saturated");
    assertThat(retry.refusal()).isNull(); // earlyRetry: count
    c.complete(retry);
    ticker.advance(Duration.ofMillis(1));
    Attempt honoured = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(honoured.retryAfter()).isEqualTo(Attempt.HONOURED);
    c.complete(honoured);

    // without an operation id: remembered by tenant
    c.remember("gpu", "bob", null, Reason.TENANT_RATE, 3);
    assertThat(check(c, "bob", null, SDK_RETRY).retryAfter()).isEqualTo(Attempt.EARLY);
    ticker.advance(Duration.ofSeconds(3));
    assertThat(check(c, "bob", null, SDK_RETRY).retryAfter()).isEqualTo(Attempt.HONOURED);
    // forgotten window (60 s) after its Retry-After
    ticker.advance(Duration.ofSeconds(60));
    Attempt late = check(c, "bob", null, SDK_RETRY);
    assertThat(late.retryAfter()).isEqualTo(Attempt.NONE);
    assertThat(late.previousReason()).isEqualTo(Attempt.UNKNOWN);
  }

  @Test
  void earlyRetry_refuse_givesRetryAfterNoShorterThanTheOneGiven_andSpendsNoBudget() {
    RetryControl c =
        control(
            policy(
                new Budget(true, Budget.Scope.TENANT, 2, 0.1),
                RetryPolicy.EarlyRetry.REFUSE,
                REFUSE));
    c.remember("gpu", "acme", null, Reason.POOL_SATURATED, 7);
    ticker.advance(Duration.ofSeconds(6));
    Attempt a = check(c, "acme", null, SDK_RETRY);
    assertThat(a.refusal().reason()).isEqualTo(Reason.EARLY_RETRY);
    assertThat(a.refusal().status()).isEqualTo(429);
    assertThat(a.refusal().retryAfterSeconds()).isEqualTo(7);
    assertThat(a.budgetTokens()).isNaN(); // not touched
    ticker.advance(Duration.ofSeconds(1));
    Attempt b = check(c, "acme", null, SDK_RETRY);
    assertThat(b.refusal()).isNull();
    assertThat(b.retryAfter()).isEqualTo(Attempt.HONOURED);
    assertThat(b.budgetTokens()).isEqualTo(1.0);
  }

  @Test
  void duplicateInFlight_refused409_withItsAge_thenFreeOnceCompleted_exactlyTheOwnersClaim() {
    RetryControl c = budgetOnly(100, 1);
    Attempt first = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(first.claimKey()).isNotNull();
    ticker.advance(Duration.ofSeconds(12));
    Attempt dup = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(dup.duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    assertThat(dup.claimKey()).isNull();
    assertThat(dup.refusal().reason()).isEqualTo(Reason.DUPLICATE_OPERATION);
    assertThat(dup.refusal().status()).isEqualTo(409);
    assertThat(dup.refusal().message()).contains("started 12 s ago").contains("still running");
    c.complete(dup); // holds no claim: a no-op
    assertThat(check(c, "acme", "op-1", NO_SIGNALS).duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    c.complete(first);
    Attempt after = check(c, "acme", "op-1", NO_SIGNALS);
    assertThat(after.duplicate()).isEqualTo(Attempt.NONE);
    assertThat(after.claimKey()).isNotNull();
    c.complete(first); // the old owner again: leaves the new claim alone
    assertThat(check(c, "acme", "op-1", NO_SIGNALS).duplicate()).isEqualTo(Attempt.IN_FLIGHT);
  }

  @Test
  void duplicateInFlight_claimExpiresAfterMaxInFlight() {
    RetryControl c = budgetOnly(100, 1);
    check(c, "acme", "op-1", NO_SIGNALS); // never completed (a replica that died)
    ticker.advance(Duration.ofMinutes(10).minusMillis(1));
    assertThat(check(c, "acme", "op-1", NO_SIGNALS).duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    ticker.advance(Duration.ofMillis(1));
    assertThat(check(c, "acme", "op-1", NO_SIGNALS).duplicate()).isEqualTo(Attempt.NONE);
  }

  @Test
  void duplicates_admitPerRoute_andReplayWindow() {
    Duplicates d =
        new Duplicates(
            Duplicates.Action.REFUSE,
            Duration.ofSeconds(30),
            Duration.ofMinutes(10),
            Map.of("embeddings", new Duplicates.Route(Duplicates.Action.ADMIT, Duration.ZERO)));
    RetryControl c =
        control(
            policy(
                new Budget(false, Budget.Scope.TENANT, 10, 0.1), RetryPolicy.EarlyRetry.COUNT, d));
    Attempt e1 = get(c.check("gpu", "embeddings", "acme", "op-e", NO_SIGNALS, 1));
    Attempt e2 = get(c.check("gpu", "embeddings", "acme", "op-e", NO_SIGNALS, 1));
    assertThat(e2.duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    assertThat(e2.refusal()).isNull(); // admitted on this route
    c.complete(e1);

    Attempt first = check(c, "acme", "op-r", NO_SIGNALS);
    c.complete(first); // done: a replay marker for 30 s
    ticker.advance(Duration.ofSeconds(29));
    Attempt replay = check(c, "acme", "op-r", NO_SIGNALS);
    assertThat(replay.duplicate()).isEqualTo(Attempt.REPLAY);
    assertThat(replay.refusal().reason()).isEqualTo(Reason.DUPLICATE_OPERATION);
    assertThat(replay.refusal().message()).contains("completed 29 s ago");
    ticker.advance(Duration.ofSeconds(1));
    assertThat(check(c, "acme", "op-r", NO_SIGNALS).refusal()).isNull();
  }

  @Test
  void storeFailure_open_classifiesFromHeaders_closed_refusesRetriesOnly() {
    AttemptStore broken =
        new AttemptStore() {
          @Override
          public CompletionStage<Observation> observe(Observe o) {
            return java.util.concurrent.CompletableFuture.failedFuture(
                new IllegalStateException("down"));
          }

          @Override
          public CompletionStage<Void> complete(String k, String owner, long replayMillis) {
            throw new IllegalStateException("down");
          }

          @Override
          public CompletionStage<Void> remember(String k, long ra, String reason, long keep) {
            throw new IllegalStateException("down");
          }
        };
    RetryPolicy p = RetryPolicy.DEFAULTS;
    RetryControl open = new RetryControl(p, broken, "t_", true, System::nanoTime);
    Attempt a = get(open.check("gpu", "chat", "acme", "op", SDK_RETRY, 1));
    assertThat(a.storeFailed()).isTrue();
    assertThat(a.retry()).isTrue();
    assertThat(a.refusal()).isNull();
    open.complete(a);
    open.remember("gpu", "acme", "op", Reason.POOL_SATURATED, 3); // swallowed
    RetryControl closed = new RetryControl(p, broken, "t_", false, System::nanoTime);
    assertThat(get(closed.check("gpu", "chat", "acme", "op", SDK_RETRY, 1)).refusal().reason())
        .isEqualTo(Reason.RETRY_BUDGET);
    assertThat(get(closed.check("gpu", "chat", "acme", "op", NO_SIGNALS, 1)).refusal()).isNull();
  }

  @Test
  void off_classifiesNothing() {
    RetryControl c = new RetryControl(RetryPolicy.OFF, store, "t_", true, System::nanoTime);
    assertThat(c.enabled()).isFalse();
    assertThat(RetryControl.off().enabled()).isFalse();
    assertThat(check(c, "acme", "op", SDK_RETRY).classified()).isFalse();
  }

  @Test
  void memory_isBounded_byMaxEntries() {
    InMemoryAttemptStore small = new InMemoryAttemptStore(ticker, 100);
    RetryControl c = new RetryControl(RetryPolicy.DEFAULTS, small, "t_", true, System::nanoTime);
    for (int i = 0; i < 10_000; i++) {
      check(c, "t" + i, "op-" + i, NO_SIGNALS);
    }
    assertThat(small.size()).isLessThanOrEqualTo(100);
  }

  @Test
  void keys_longClientIdsAreHashed() {
    String longId = "x".repeat(10_000);
    assertThat(RetryKeys.operation("ns_", "gpu", "acme", longId)).hasSizeLessThan(200);
    assertThat(RetryKeys.operation("ns_", "gpu", "acme", "op-1"))
        .isEqualTo("ns_{gpu}:retry:op:acme:op-1");
  }

  @Test
  void signals_parse() {
    assertThat(AttemptSignals.parse(null)).isEqualTo(-1);
    assertThat(AttemptSignals.parse(" 2 ")).isEqualTo(2);
    assertThat(AttemptSignals.parse("-3")).isEqualTo(-1);
    assertThat(AttemptSignals.parse("abc")).isEqualTo(-1);
    assertThat(AttemptSignals.parse("99999999999999")).isEqualTo(1000);
    assertThat(new AttemptSignals(0, 1, null).claimedAttempt()).isEqualTo(1);
    assertThat(new AttemptSignals(2, 1, null).claimedAttempt()).isEqualTo(3);
  }
}
