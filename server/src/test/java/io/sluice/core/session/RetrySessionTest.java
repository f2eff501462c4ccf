package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.retry.Attempt;
import io.sluice.core.retry.AttemptSignals;
import io.sluice.core.retry.AttemptStore;
import io.sluice.core.retry.RetryAttemptCheck;
import io.sluice.core.retry.RetryControl;
import io.sluice.core.retry.RetryPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import io.sluice.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * Retry control ({@link RetryAttemptCheck}, through {@link AdmissionSession#begin}) on {@link
 * OneSlotPool} (one request slot, 5 s hold): the operation's in-flight claim is given back exactly
 * once on every end path (response end, cancel while queued or while the store answers, refusal,
 * shadow pass), refusals go through {@code refuse} (remembered for the next attempt; shadow records
 * "would" and lets through).
 */
class RetrySessionTest {
  private static final long HOLD = Duration.ofSeconds(5).toNanos();
  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final Counting store = new Counting(new InMemoryAttemptStore(ticker, 1000));
  private final Tenant acme = new Tenant("acme", TierPolicy.defaults("pro"));
  private RetryPolicy policy = RetryPolicy.DEFAULTS;

  /** Counts the claims given back, by key; can hold the observe answer back. */
  static final class Counting implements AttemptStore {
    final AttemptStore inner;
    final Map<String, Integer> completes = new ConcurrentHashMap<>();
    CompletableFuture<Void> gate = CompletableFuture.completedFuture(null);

    Counting(AttemptStore inner) {
      this.inner = inner;
    }

    @Override
    public CompletionStage<Observation> observe(Observe o) {
      return gate.thenCompose(v -> inner.observe(o));
    }

    @Override
    public CompletionStage<Void> complete(String key, String owner, long replayMillis) {
      completes.merge(owner, 1, Integer::sum);
      return inner.complete(key, owner, replayMillis);
    }

    @Override
    public CompletionStage<Void> remember(String k, long ra, String reason, long keepMillis) {
      return inner.remember(k, ra, reason, keepMillis);
    }

    int total() {
      return completes.values().stream().mapToInt(Integer::intValue).sum();
    }
  }

  private Sessions sessions() {
    return OneSlotPool.sessionsBuilder(controller, quotas, ticker, clock, timer, events::add)
        .check(
            RetryAttemptCheck.ORDER,
            RetryAttemptCheck.factory(
                new RetryControl(policy, store, "t_", true, System::nanoTime)))
        .build();
  }

  private AdmissionSession start(
      AdmissionSessionTest.Front f, String op, AttemptSignals sig, boolean shadow) {
    long now = ticker.nanos();
    Subject s =
        new Subject(
            "chat",
            OneSlotPool.POOL,
            OneSlotPool.INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            acme,
            now,
            now + Duration.ofSeconds(30).toNanos(),
            op,
            HOLD,
            shadow,
            0,
            null,
            signals(sig));
    AdmissionSession session = sessions().open(s, f, Runnable::run, SessionSteps.NONE);
    session.begin(true, true, 0, now);
    return session;
  }

  /** The trusted signals the resolver reads while retry control is on, as {@code sig} says. */
  private static Signals signals(AttemptSignals sig) {
    return Signals.of(
        new String[] {RetryAttemptCheck.RETRY_COUNT, RetryAttemptCheck.ATTEMPT_COUNT},
        new String[] {
          sig.retryCount() < 0 ? null : String.valueOf(sig.retryCount()),
          sig.attemptCount() < 0 ? null : String.valueOf(sig.attemptCount())
        });
  }

  private AdmissionSession start(AdmissionSessionTest.Front f, String op) {
    return start(f, op, AttemptSignals.NONE, false);
  }

  @Test
  void admitted_claimGivenBackOnceAtTheEnd_whateverTheFrontEndCalls() {
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, "op-1");
    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(RetryAttemptCheck.attempt(s.facts()).claimKey()).isNotNull();
    assertThat(store.total()).isZero();
    s.release(Outcome.COMPLETED);
    s.end(Outcome.CANCELLED);
    s.releaseQuietly(Outcome.ERROR);
    s.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(1);
    assertThat(events).anySatisfy(e -> assertThat(e).isInstanceOf(SessionEvent.Noted.class));
  }

  @Test
  void duplicateWhileTheFirstRuns_refused409_holdsNoClaim_firstStillGivesItsBackOnce() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession first = start(f1, "op-1");
    ticker.advance(Duration.ofSeconds(3));
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession dup = start(f2, "op-1");
    assertThat(f2.calls).containsExactly("refused");
    assertThat(f2.refusedWith).isEqualTo(Reason.DUPLICATE_OPERATION);
    assertThat(f2.refusedStatus).isEqualTo(409);
    assertThat(RetryAttemptCheck.attempt(dup.facts()).duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    dup.end(Outcome.CANCELLED);
    assertThat(store.total()).isZero();
    first.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(1);
    // free again: the next attempt is a retry of the operation, admitted
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession third = start(f3, "op-1");
    assertThat(f3.calls).containsExactly("admitted(headers)");
    assertThat(RetryAttemptCheck.attempt(third.facts()).retry()).isTrue();
    assertThat(RetryAttemptCheck.attempt(third.facts()).number()).isEqualTo(3);
    third.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(2);
  }

  @Test
  void queuedThenCancelled_andRefusedByThePool_eachGiveTheirClaimBackOnce() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession running = start(f1, "op-a");
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession queued = start(f2, "op-b");
    assertThat(f2.calls).containsExactly("held");
    queued.end(Outcome.CANCELLED);
    queued.end(Outcome.CANCELLED);
    assertThat(store.completes).containsEntry(RetryAttemptCheck.attempt(queued.facts()).owner(), 1);
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession expired = start(f3, "op-c");
    assertThat(f3.calls).containsExactly("held");
    ticker.advance(Duration.ofSeconds(6));
    timer.fireAll(); // the hold expires: refused queue_timeout
    assertThat(f3.calls).containsExactly("held", "refused");
    expired.end(Outcome.CANCELLED);
    assertThat(store.completes)
        .containsEntry(RetryAttemptCheck.attempt(expired.facts()).owner(), 1);
    running.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(3);
  }

  @Test
  void frontEndGoneWhileTheStoreAnswers_claimGivenBackWhenItAnswers() {
    store.gate = new CompletableFuture<>();
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, "op-1");
    s.end(Outcome.CANCELLED);
    store.gate.complete(null);
    assertThat(f.calls).isEmpty();
    assertThat(RetryAttemptCheck.attempt(s.facts()).claimKey()).isNotNull();
    assertThat(store.total()).isEqualTo(1);
    s.end(Outcome.CANCELLED);
    assertThat(store.total()).isEqualTo(1);
  }

  @Test
  void retryOverBudget_refused429_thenRefusalRemembered_nextAttemptIsEarlyOrHonoured() {
    policy =
        new RetryPolicy(
            true,
            Duration.ofSeconds(60),
            1000,
            new RetryPolicy.Budget(true, RetryPolicy.Budget.Scope.TENANT, 2, 0.1),
            RetryPolicy.EarlyRetry.COUNT,
            RetryPolicy.DEFAULTS.duplicates());
    AttemptSignals sdk = new AttemptSignals(1, -1, null);
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    start(f1, null, sdk, false).release(Outcome.COMPLETED); // 2 → 1
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession refused = start(f2, null, sdk, false);
    assertThat(f2.refusedWith).isEqualTo(Reason.RETRY_BUDGET);
    assertThat(f2.refusedStatus).isEqualTo(429);
    assertThat(f2.refusedRetryAfter).isPositive();
    assertThat(RetryAttemptCheck.attempt(refused.facts()).retry()).isTrue();
    long ra = f2.refusedRetryAfter;
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession early = start(f3, null, sdk, false);
    assertThat(RetryAttemptCheck.attempt(early.facts()).retryAfter()).isEqualTo(Attempt.EARLY);
    assertThat(RetryAttemptCheck.attempt(early.facts()).previousReason()).isEqualTo("retry_budget");
    ticker.advance(Duration.ofSeconds(ra));
    AdmissionSessionTest.Front f4 = new AdmissionSessionTest.Front();
    AdmissionSession honoured = start(f4, null, sdk, false);
    assertThat(RetryAttemptCheck.attempt(honoured.facts()).retryAfter())
        .isEqualTo(Attempt.HONOURED);
  }

  @Test
  void shadow_duplicateWouldBeRefused_letThrough_claimOfTheFirstKeptUntilItsEnd() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession first = start(f1, "op-s", AttemptSignals.NONE, true);
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession dup = start(f2, "op-s", AttemptSignals.NONE, true);
    assertThat(f2.calls).containsExactly("admitted(headers)");
    assertThat(dup.running().would()).isEqualTo("reject");
    assertThat(dup.running().wouldReason()).isEqualTo(Reason.DUPLICATE_OPERATION);
    dup.release(Outcome.COMPLETED);
    assertThat(store.total()).isZero();
    // a third, while the first still runs (shadow: pool full -> a would-be queue, a pass): still
    // sees the first's claim
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    AdmissionSession third = start(f3, "op-s", AttemptSignals.NONE, true);
    assertThat(RetryAttemptCheck.attempt(third.facts()).duplicate()).isEqualTo(Attempt.IN_FLIGHT);
    third.release(Outcome.COMPLETED);
    first.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(1);
  }

  @Test
  void shadowPass_holdsItsClaimWhileItRuns_givesItBackOnceAtItsEnd() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession running = start(f1, "op-x", AttemptSignals.NONE, true);
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession pass = start(f2, "op-y", AttemptSignals.NONE, true); // would queue: a pass
    assertThat(pass.running().would()).isEqualTo("queue");
    assertThat(store.completes).doesNotContainKey(RetryAttemptCheck.attempt(pass.facts()).owner());
    pass.release(Outcome.COMPLETED);
    pass.end(Outcome.CANCELLED);
    assertThat(store.completes).containsEntry(RetryAttemptCheck.attempt(pass.facts()).owner(), 1);
    running.release(Outcome.COMPLETED);
    assertThat(store.total()).isEqualTo(2);
  }
}
