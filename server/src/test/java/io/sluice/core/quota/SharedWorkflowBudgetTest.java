package io.sluice.core.quota;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.memory.InMemoryLeasedPlaces;
import io.sluice.store.memory.InMemoryWorkflowPlaces;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * The workflow budget across replicas: two replicas on one store share one budget; a store that
 * does not answer follows the failure mode (open: this replica's share of the budget; closed:
 * refused); a place is given back once, where it was taken; the renewed set empties.
 */
class SharedWorkflowBudgetTest {
  private static final WorkflowPlaces DOWN =
      new WorkflowPlaces() {
        @Override
        public CompletionStage<PlaceAnswer> acquire(
            String ns, String pool, String wf, String r, long w, int mr, long mw, long ttl) {
          return CompletableFuture.failedFuture(new IllegalStateException("down"));
        }

        @Override
        public CompletionStage<Void> release(
            String ns, String pool, String wf, String r, long w, long ttl) {
          return CompletableFuture.failedFuture(new IllegalStateException("down"));
        }

        @Override
        public CompletionStage<Void> renew(
            String ns, String pool, String r, Map<String, Integer> held, long ttl) {
          return CompletableFuture.failedFuture(new IllegalStateException("down"));
        }
      };

  private static SharedWorkflowBudget replica(WorkflowPlaces store, String id) {
    return new SharedWorkflowBudget(new WorkflowBudget(100), store, "t_", id, () -> 60_000);
  }

  private static SharedWorkflowBudget.Place take(
      SharedWorkflowBudget b, int maxRequests, TenantQuotas.FailureMode mode) {
    return b.acquire("p", "run", 1, maxRequests, 0, 0.5, mode).toCompletableFuture().join();
  }

  @Test
  void twoReplicasShareOneBudget_andAPlaceComesBackOnce() {
    InMemoryWorkflowPlaces store =
        new InMemoryWorkflowPlaces(new InMemoryLeasedPlaces(Clock.systemUTC()));
    SharedWorkflowBudget a = replica(store, "a");
    SharedWorkflowBudget b = replica(store, "b");
    SharedWorkflowBudget.Place pa = take(a, 1, TenantQuotas.FailureMode.OPEN);
    assertThat(pa.check().granted()).isTrue();
    assertThat(pa.where()).isEqualTo(SharedWorkflowBudget.Where.SHARED);
    SharedWorkflowBudget.Place pb = take(b, 1, TenantQuotas.FailureMode.OPEN);
    assertThat(pb.check().allowed()).isFalse();
    assertThat(pb.check().requests()).isEqualTo(1);
    b.release("p", "run", 1, pb); // a refusal holds nothing
    a.release("p", "run", 1, pa);
    a.release("p", "run", 1, pa); // a second release is a no-op
    assertThat(a.held()).isZero();
    assertThat(take(b, 1, TenantQuotas.FailureMode.OPEN).check().granted()).isTrue();
    assertThat(store.contributions("t_", "p", "run")).containsOnlyKeys("b");
  }

  @Test
  void storeDown_open_takesThisReplicasShare_closed_refuses() {
    SharedWorkflowBudget open = replica(DOWN, "a");
    SharedWorkflowBudget.Place p = take(open, 2, TenantQuotas.FailureMode.OPEN);
    assertThat(p.storeFailed()).isTrue();
    assertThat(p.where()).isEqualTo(SharedWorkflowBudget.Where.LOCAL);
    assertThat(p.check().requestLimit()).as("half of 2").isEqualTo(1);
    assertThat(take(open, 2, TenantQuotas.FailureMode.OPEN).check().allowed()).isFalse();
    open.release("p", "run", 1, p);
    assertThat(open.localBudget().requests("p", "run")).isZero();
    assertThat(open.storeFailures()).isEqualTo(2);

    SharedWorkflowBudget closed = replica(DOWN, "b");
    SharedWorkflowBudget.Place refused = take(closed, 2, TenantQuotas.FailureMode.CLOSED);
    assertThat(refused.check().allowed()).isFalse();
    assertThat(refused.storeFailed()).isTrue();
    assertThat(closed.held()).isZero();
    assertThat(closed.renew().toCompletableFuture().join()).isNull();
  }

  @Test
  void local_answersAtOnceFromThisProcess() {
    SharedWorkflowBudget local = SharedWorkflowBudget.local(new WorkflowBudget(100));
    assertThat(local.shared()).isFalse();
    SharedWorkflowBudget.Place p = take(local, 1, TenantQuotas.FailureMode.CLOSED);
    assertThat(p.where()).isEqualTo(SharedWorkflowBudget.Where.LOCAL);
    assertThat(local.localBudget().requests("p", "run")).isEqualTo(1);
    local.release("p", "run", 1, p);
    assertThat(local.localBudget().requests("p", "run")).isZero();
  }
}
