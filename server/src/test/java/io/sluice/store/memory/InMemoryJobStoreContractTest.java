package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.OperationIds;
import io.sluice.store.JobStoreContractTest;
import org.junit.jupiter.api.Test;

/** The in-process job store: both "replicas" are the one store. */
class InMemoryJobStoreContractTest extends JobStoreContractTest {
  private final InMemoryJobStore store = new InMemoryJobStore(10_000);

  @Override
  protected JobStore replicaA() {
    return store;
  }

  @Override
  protected JobStore replicaB() {
    return store;
  }

  @Override
  protected String prefix() {
    return "t_";
  }

  @Test
  void atItsBound_theOldestDoneJobGoes_andWaitingJobsAreNeverDropped() {
    InMemoryJobStore small = new InMemoryJobStore(2);
    JobStore.Caps caps = new JobStore.Caps(100, 1_000_000, 60_000);
    JobStore.NewJob a = job("a");
    JobStore.NewJob b = job("b");
    assertThat(small.enqueue("p", a, caps).toCompletableFuture().join().accepted()).isTrue();
    assertThat(small.enqueue("p", b, caps).toCompletableFuture().join().accepted()).isTrue();
    assertThat(small.enqueue("p", job("c"), caps).toCompletableFuture().join().full())
        .isEqualTo(InMemoryJobStore.FULL_STORE);
    small.cancel("p", "acme", a.id(), T0, 60_000).toCompletableFuture().join();
    assertThat(small.enqueue("p", job("d"), caps).toCompletableFuture().join().accepted()).isTrue();
    assertThat(small.read("p", "acme", a.id(), T0, 60_000).toCompletableFuture().join()).isNull();
    assertThat(small.read("p", "acme", b.id(), T0, 60_000).toCompletableFuture().join())
        .isNotNull();
  }

  private static JobStore.NewJob job(String route) {
    return new JobStore.NewJob(
        OperationIds.next(), "acme", "gpu", "batch", route, null, 1, T0, T0 + 60_000, new byte[1]);
  }
}
