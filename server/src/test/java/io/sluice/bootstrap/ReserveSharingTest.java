package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.ReserveStore;
import io.sluice.observability.MetricNames;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryReserveStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;

/** Replicas sharing the learned reserve through one store: start warm, keep across a restart. */
class ReserveSharingTest {
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final InMemoryReserveStore store = new InMemoryReserveStore(clock);

  private static OutputReserves learner() {
    return new OutputReserves(OutputReserves.Settings.DEFAULTS);
  }

  private ReserveSharing sharing(OutputReserves r) {
    return new ReserveSharing(ReserveSharing.reserves(r), store, "test_", () -> List.of("gpu"));
  }

  private static OutputReserves.Reserve reserve(OutputReserves r, String tenant) {
    return r.reserve("gpu", "m1", "chat", tenant, 0.9, 4096, 1024, 1, 4096);
  }

  /** {@code n} answers of 100-300 tokens from each tenant, interleaved. */
  private static void answers(OutputReserves r, int n, String... tenants) {
    for (int i = 0; i < n; i++) {
      for (String t : tenants) {
        r.record("gpu", "m1", "chat", t, 0.9, 4096, 1, 100 + (i * 37) % 200);
      }
    }
  }

  @Test
  void aNewReplica_readsTheSharedStateAtStart_andDoesNotStartCold() throws Exception {
    OutputReserves a = learner();
    ReserveSharing sa = sharing(a);
    answers(a, 50, "acme", "globex");
    sa.exchange().toCompletableFuture().get();

    OutputReserves b = learner();
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try (ReserveSharing sb = sharing(b)) {
      sb.start(timer, Duration.ofSeconds(2));

      assertThat(reserve(b, "acme")).isEqualTo(reserve(a, "acme"));
      assertThat(reserve(b, "acme").rule()).isIn("bound", "learned");
      // a tenant neither replica saw starts from the pool's value, not the class default
      assertThat(reserve(b, "initech").rule()).isEqualTo("prior");
      assertThat(reserve(b, "initech").outputTokens()).isLessThan(400);
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void aRestart_keepsWhatWasLearnedSinceTheLastExchange_closeSendsIt() throws Exception {
    OutputReserves before = learner();
    ReserveSharing s = sharing(before);
    answers(before, 40, "acme"); // never exchanged on a timer
    s.close();

    OutputReserves after = learner();
    sharing(after).exchange().toCompletableFuture().get();

    assertThat(reserve(after, "acme").rule()).isIn("bound", "learned");
    assertThat(reserve(after, "acme").outputTokens())
        .isEqualTo(reserve(before, "acme").outputTokens());
  }

  @Test
  void twoReplicas_eachSeesTheOthersAnswers() throws Exception {
    OutputReserves a = learner();
    OutputReserves b = learner();
    ReserveSharing sa = sharing(a);
    ReserveSharing sb = sharing(b);
    answers(a, 3, "acme");
    answers(b, 3, "acme");
    assertThat(reserve(a, "acme").rule()).isEqualTo("prior"); // 3 < warmup 5 each

    sa.exchange().toCompletableFuture().get();
    sb.exchange().toCompletableFuture().get();
    sa.exchange().toCompletableFuture().get();

    assertThat(reserve(a, "acme").rule()).isEqualTo("bound"); // 6 answers together
    assertThat(reserve(b, "acme").rule()).isEqualTo("bound");
  }

  private static double counted(SimpleMeterRegistry r, String name, String... tags) {
    var c = r.find(name).tags(tags).functionCounter();
    return c == null ? -1 : c.count();
  }

  @Test
  void exchanges_countedByResult_andTheKeysAdopted() throws Exception {
    OutputReserves a = learner();
    ReserveSharing sa = sharing(a);
    answers(a, 50, "acme");
    sa.exchange().toCompletableFuture().get();
    SimpleMeterRegistry up = new SimpleMeterRegistry();
    ReserveSharing sb = sharing(learner());
    sb.bindTo(up);
    sb.exchange().toCompletableFuture().get();
    sb.exchange().toCompletableFuture().get();
    SimpleMeterRegistry downRegistry = new SimpleMeterRegistry();
    ReserveStore down =
        (namespace, pools, additions, since, window, maxKeys) ->
            CompletableFuture.failedFuture(new IllegalStateException("store down"));
    ReserveSharing failing =
        new ReserveSharing(ReserveSharing.reserves(learner()), down, "test_", () -> List.of("gpu"));
    failing.bindTo(downRegistry);
    failing.exchange().toCompletableFuture().get();

    String[] reserve = {"learner", "output_reserve"};
    assertThat(counted(up, MetricNames.LEARNED_SHARE_EXCHANGES, "result", "ok")).isEqualTo(2.0);
    assertThat(counted(up, MetricNames.LEARNED_SHARE_EXCHANGES, "result", "failed")).isZero();
    assertThat(counted(up, MetricNames.LEARNED_SHARE_ADOPTED, reserve))
        .as("the keys replica a wrote, adopted at the first exchange")
        .isPositive();
    assertThat(counted(downRegistry, MetricNames.LEARNED_SHARE_EXCHANGES, "result", "ok")).isZero();
    assertThat(counted(downRegistry, MetricNames.LEARNED_SHARE_EXCHANGES, "result", "failed"))
        .isEqualTo(1.0);
    assertThat(counted(downRegistry, MetricNames.LEARNED_SHARE_ADOPTED, reserve)).isZero();
  }
}
