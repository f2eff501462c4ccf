package io.sluice.core.turn;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryTurnLedger;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Retries per tool per turn through the check, two replicas (two checks) on one ledger: the pool's
 * retryable refusal is a shed, the first retry goes on, the second retry of the turn is refused
 * {@code turn_retries} (not retryable), whichever replica it reaches.
 */
class TurnRetryCheckTest {
  private static final AgentRunsPolicy POLICY =
      new AgentRunsPolicy(true, 1, Duration.ofMinutes(10), 1_000, null);
  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryTurnLedger ledger = new InMemoryTurnLedger(ticker, 1_000);
  private final TurnRetryCheck replicaA = new TurnRetryCheck(ledger, POLICY, "t_");
  private final TurnRetryCheck replicaB = new TurnRetryCheck(ledger, POLICY, "t_");

  static AdmissionCheck.Request request(@Nullable String run, @Nullable String turn) {
    Subject s = OneSlotPool.chat(new Tenant("acme", TierPolicy.defaults("pro")), 0, null, 0);
    Subject with =
        new Subject(
            s.route(),
            s.pool(),
            s.requestClass(),
            s.format(),
            s.tenant(),
            0,
            s.deadlineNanos(),
            null,
            0,
            false,
            0,
            run,
            turn == null ? Signals.NONE : Signals.of(AgentRunsPolicy.TURN, turn));
    return new AdmissionCheck.Request() {
      @Override
      public Subject subject() {
        return with;
      }

      @Override
      public @Nullable TokenEstimate estimate() {
        return null;
      }

      @Override
      public long workUnits() {
        return 1;
      }
    };
  }

  static AdmissionCheck.Verdict decide(TurnRetryCheck check, AdmissionCheck.Request r)
      throws Exception {
    return check.answered(check.ask(r).toCompletableFuture().get(), r);
  }

  @Test
  void aShedCallIsRetriedOnce_theSecondRetryInTheTurnIsRefused_acrossReplicas() throws Exception {
    AdmissionCheck.Request call = request("run-1", "turn-1");
    assertThat(replicaA.applies(call)).isTrue();
    assertThat(decide(replicaA, call)).isSameAs(AdmissionCheck.Continue.INSTANCE);
    replicaA.refused(call, Reason.POOL_SATURATED, 2); // shed on A
    assertThat(decide(replicaB, call))
        .as("first retry, on B")
        .isSameAs(AdmissionCheck.Continue.INSTANCE);
    replicaB.refused(call, Reason.QUEUE_TIMEOUT, 1); // shed again on B
    AdmissionCheck.Verdict second = decide(replicaA, call);
    assertThat(second).isInstanceOf(AdmissionCheck.Refusal.class);
    AdmissionCheck.Refusal r = (AdmissionCheck.Refusal) second;
    assertThat(r.reason()).isEqualTo(Reason.TURN_RETRIES);
    assertThat(r.reason().retryable()).isFalse();
    assertThat(r.status()).isEqualTo(429);
    // the refusal itself is no shed; the next turn starts afresh
    replicaA.refused(call, Reason.TURN_RETRIES, 0);
    assertThat(decide(replicaB, request("run-1", "turn-2")))
        .isSameAs(AdmissionCheck.Continue.INSTANCE);
  }

  @Test
  void onlyRetryableRefusalsWithARetryAfterAreSheds() throws Exception {
    AdmissionCheck.Request call = request("run-1", "turn-1");
    replicaA.refused(call, Reason.BUDGET_EXHAUSTED, 0);
    replicaA.refused(call, Reason.POOL_SATURATED, 0);
    replicaA.refused(call, Reason.FANOUT_BUDGET, 0);
    assertThat(ledger.size()).as("nothing recorded").isZero();
  }

  @Test
  void withoutARunOrATurn_theCheckDoesNotApply_andRecordsNothing() {
    assertThat(replicaA.applies(request(null, "turn-1"))).isFalse();
    assertThat(replicaA.applies(request("run-1", null))).isFalse();
    assertThat(replicaA.applies(request("run-1", ""))).isFalse();
    replicaA.refused(request(null, "turn-1"), Reason.POOL_SATURATED, 2);
    assertThat(ledger.size()).isZero();
  }

  @Test
  void aGiantTurnIdIsATypedRefusal_notAKey() throws Exception {
    AdmissionCheck.Request giant = request("run-1", "t".repeat(100_000));
    AdmissionCheck.Verdict v = decide(replicaA, giant);
    assertThat(((AdmissionCheck.Refusal) v).reason()).isEqualTo(Reason.INVALID_REQUEST);
    replicaA.refused(giant, Reason.POOL_SATURATED, 2);
    assertThat(ledger.size()).isZero();
  }

  @Test
  void aStoreThatDoesNotAnswer_letsTheCallThrough() throws Exception {
    TurnLedger down =
        new TurnLedger() {
          @Override
          public CompletionStage<Verdict> call(
              String namespace, String pool, String run, String turn, int max, long ttl) {
            return CompletableFuture.failedFuture(new IllegalStateException("down"));
          }

          @Override
          public CompletionStage<Void> shed(
              String namespace, String pool, String run, String turn, long ttl) {
            throw new IllegalStateException("down");
          }
        };
    TurnRetryCheck check = new TurnRetryCheck(down, POLICY, "t_");
    AdmissionCheck.Request call = request("run-1", "turn-1");
    check.refused(call, Reason.POOL_SATURATED, 2);
    assertThat(decide(check, call)).isSameAs(AdmissionCheck.Continue.INSTANCE);
  }
}
