package io.sluice.core.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class WorkflowBudgetTest {
  @Test
  void maxRequests_refusesTheNextOne_andAReleaseMakesRoom() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);

    assertThat(b.acquire("p", "wf", 10, 2, 0, 1.0).granted()).isTrue();
    assertThat(b.acquire("p", "wf", 10, 2, 0, 1.0).granted()).isTrue();
    WorkflowBudget.Check third = b.acquire("p", "wf", 10, 2, 0, 1.0);

    assertThat(third.allowed()).isFalse();
    assertThat(third.granted()).isFalse();
    assertThat(third.requests()).isEqualTo(2);
    assertThat(third.work()).isEqualTo(20);
    assertThat(third.requestLimit()).isEqualTo(2);
    assertThat(b.acquire("p", "other", 10, 2, 0, 1.0).granted()).isTrue();
    assertThat(b.acquire("q", "wf", 10, 2, 0, 1.0).granted()).as("another pool").isTrue();

    b.release("p", "wf", 10);
    assertThat(b.acquire("p", "wf", 10, 2, 0, 1.0).granted()).isTrue();
  }

  @Test
  void maxWork_refusesWhatWouldCrossIt_butAnEmptyWorkflowMayStartOneLargeRequest() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);

    assertThat(b.acquire("p", "wf", 500, 0, 100, 1.0).granted())
        .as("larger than the budget, alone: runs rather than never")
        .isTrue();
    assertThat(b.acquire("p", "wf", 1, 0, 100, 1.0).allowed()).isFalse();
    b.release("p", "wf", 500);
    assertThat(b.acquire("p", "wf", 60, 0, 100, 1.0).granted()).isTrue();
    assertThat(b.acquire("p", "wf", 40, 0, 100, 1.0).granted()).isTrue();
    WorkflowBudget.Check over = b.acquire("p", "wf", 1, 0, 100, 1.0);
    assertThat(over.allowed()).isFalse();
    assertThat(over.work()).isEqualTo(100);
    assertThat(over.workLimit()).isEqualTo(100);
  }

  @Test
  void entriesLeaveWithTheirLastRequest_andTheGaugeCountsWorkflowsPerPool() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    b.acquire("p", "a", 1, 5, 0, 1.0);
    b.acquire("p", "a", 1, 5, 0, 1.0);
    b.acquire("p", "b", 1, 5, 0, 1.0);
    b.acquire("q", "a", 1, 5, 0, 1.0);

    assertThat(b.workflows("p")).isEqualTo(2);
    assertThat(b.workflows("q")).isEqualTo(1);
    assertThat(b.size()).isEqualTo(3);

    b.release("p", "a", 1);
    assertThat(b.workflows("p")).isEqualTo(2);
    b.release("p", "a", 1);
    b.release("p", "b", 1);
    b.release("q", "a", 1);
    assertThat(b.size()).isZero();
    assertThat(b.workflows("p")).isZero();
    assertThat(b.workflows("q")).isZero();
  }

  @Test
  void releaseOfNothingHeld_isANoOp() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    b.release("p", "wf", 5);
    b.acquire("p", "wf", 5, 1, 0, 1.0);
    b.release("p", "wf", 5);
    b.release("p", "wf", 5);

    assertThat(b.size()).isZero();
    assertThat(b.acquire("p", "wf", 5, 1, 0, 1.0).granted()).isTrue();
    assertThat(b.acquire("p", "wf", 5, 1, 0, 1.0).allowed()).isFalse();
  }

  @Test
  void fullMap_letsANewWorkflowThroughUntracked_andCountsIt() {
    WorkflowBudget b = new WorkflowBudget(2);
    b.acquire("p", "a", 1, 1, 0, 1.0);
    b.acquire("p", "b", 1, 1, 0, 1.0);

    WorkflowBudget.Check c = b.acquire("p", "c", 1, 1, 0, 1.0);

    assertThat(c).isEqualTo(WorkflowBudget.Check.UNTRACKED);
    assertThat(c.allowed()).isTrue();
    assertThat(c.granted()).isFalse();
    assertThat(b.untracked()).isEqualTo(1);
    assertThat(b.size()).isEqualTo(2);
    assertThat(b.acquire("p", "a", 1, 1, 0, 1.0).allowed())
        .as("tracked ones still capped")
        .isFalse();
    assertThatThrownBy(() -> new WorkflowBudget(0)).hasMessageContaining("maxWorkflows");
  }

  /** A replica holds its share of the budget: floor(limit × share), at least one request. */
  @Test
  void replicaShare_scalesTheLimits() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    for (int i = 0; i < 5; i++) {
      assertThat(b.acquire("p", "wf", 1, 10, 0, 0.5).granted()).isTrue();
    }
    WorkflowBudget.Check sixth = b.acquire("p", "wf", 1, 10, 0, 0.5);
    assertThat(sixth.allowed()).isFalse();
    assertThat(sixth.requestLimit()).isEqualTo(5);

    assertThat(b.acquire("p", "tiny", 1, 10, 0, 0.01).granted()).isTrue();
    assertThat(b.acquire("p", "tiny", 1, 10, 0, 0.01).allowed()).as("at least one").isFalse();

    WorkflowBudget.Check w = b.acquire("p", "work", 30, 0, 100, 0.25);
    assertThat(w.workLimit()).isEqualTo(25);
  }

  @Test
  void longIds_areCutToTheCap() {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    String longId = "x".repeat(WorkflowBudget.MAX_ID_CHARS);
    b.acquire("p", longId + "-one", 1, 5, 0, 1.0);

    assertThat(b.requests("p", longId + "-two")).isEqualTo(1);
    assertThat(WorkflowBudget.normalize(longId + "abc")).hasSize(WorkflowBudget.MAX_ID_CHARS);
  }

  /**
   * Concurrent acquires and releases (seeded): never more granted at once than the cap, and
   * everything given back leaves the map empty.
   */
  @ParameterizedTest
  @ValueSource(longs = {1L, 7L, 2024L})
  void concurrent_neverAboveTheCap_andDrainsToEmpty(long seed) throws Exception {
    WorkflowBudget b = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    int threads = 4;
    int cap = 3;
    int[] live = new int[1];
    int[] maxSeen = new int[1];
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<java.util.concurrent.Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Random r = new Random(seed * 31 + t);
      done.add(
          pool.submit(
              () -> {
                start.await();
                for (int i = 0; i < 2_000; i++) {
                  String wf = "wf" + r.nextInt(2);
                  if (b.acquire("p", wf, 1, cap, 0, 1.0).granted()) {
                    synchronized (live) {
                      live[0]++;
                      maxSeen[0] = Math.max(maxSeen[0], b.requests("p", wf));
                    }
                    b.release("p", wf, 1);
                    synchronized (live) {
                      live[0]--;
                    }
                  }
                }
                return null;
              }));
    }
    start.countDown();
    for (var f : done) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();

    assertThat(maxSeen[0]).isBetween(1, cap);
    assertThat(b.size()).isZero();
    assertThat(b.workflows("p")).isZero();
  }
}
