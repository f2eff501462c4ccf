package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

class SerialExecutorTest {
  private final List<Throwable> failures = new ArrayList<>();
  private final SerialExecutor ex = new SerialExecutor(failures::add);

  @Test
  void runsAtOnceOnTheCallingThreadWhenIdle() {
    Thread[] ranOn = new Thread[1];
    ex.execute(() -> ranOn[0] = Thread.currentThread());
    assertThat(ranOn[0]).isSameAs(Thread.currentThread());
  }

  @Test
  void aTaskSubmittedFromATaskRunsAfterIt() {
    List<String> order = new ArrayList<>();
    ex.execute(
        () -> {
          order.add("outer-start");
          ex.execute(() -> order.add("inner"));
          order.add("outer-end");
        });
    assertThat(order).containsExactly("outer-start", "outer-end", "inner");
  }

  @Test
  void aFailingTaskIsReportedAndTheNextStillRuns() {
    AtomicInteger ran = new AtomicInteger();
    ex.execute(
        () -> {
          ex.execute(ran::incrementAndGet);
          throw new IllegalStateException("boom");
        });
    ex.execute(ran::incrementAndGet);
    assertThat(failures).hasSize(1);
    assertThat(failures.get(0)).hasMessage("boom");
    assertThat(ran).hasValue(2);
  }

  /**
   * The allocation-free steps: at once when idle, after the running task when not, failures told.
   */
  @Test
  void stepsRunAtOnceWhenIdle_afterTheRunningTaskWhenNot_andTheirFailuresAreReported() {
    List<String> order = new ArrayList<>();
    ex.execute((List<String> o, String s, long n) -> o.add(s + n), order, "idle-", 1);
    assertThat(order).containsExactly("idle-1");
    ex.execute(
        () -> {
          order.add("outer-start");
          ex.execute((List<String> o, String s, long n) -> o.add(s + n), order, "step-", 2);
          ex.execute((List<String> o) -> o.add("consumer"), order);
          order.add("outer-end");
        });
    assertThat(order).containsExactly("idle-1", "outer-start", "outer-end", "step-2", "consumer");
    ex.execute(
        (List<String> o) -> {
          throw new IllegalStateException("step boom");
        },
        order);
    ex.execute((List<String> o, String s, long n) -> o.add(s), order, "after", 0);
    assertThat(failures).singleElement().satisfies(t -> assertThat(t).hasMessage("step boom"));
    assertThat(order).endsWith("after");
  }

  /** Many threads at once: never two tasks at a time, none lost, each thread's order kept. */
  @RepeatedTest(20)
  void serialUnderContention() throws Exception {
    int threads = 4;
    int perThread = 20_000;
    AtomicBoolean inside = new AtomicBoolean();
    AtomicInteger overlaps = new AtomicInteger();
    int[] lastSeen = new int[threads];
    int[] outOfOrder = new int[1];
    int[] total = new int[1]; // plain int: safe only if tasks never overlap and publish in order
    CyclicBarrier start = new CyclicBarrier(threads);
    CountDownLatch done = new CountDownLatch(threads);
    for (int t = 0; t < threads; t++) {
      final int id = t;
      new Thread(
              () -> {
                try {
                  start.await();
                  for (int i = 1; i <= perThread; i++) {
                    final int seq = i;
                    ex.execute(
                        () -> {
                          if (!inside.compareAndSet(false, true)) {
                            overlaps.incrementAndGet();
                          }
                          if (lastSeen[id] != seq - 1) {
                            outOfOrder[0]++;
                          }
                          lastSeen[id] = seq;
                          total[0]++;
                          inside.set(false);
                        });
                  }
                } catch (Exception e) {
                  throw new RuntimeException(e);
                } finally {
                  done.countDown();
                }
              })
          .start();
    }
    done.await();
    // Every submitter has returned; a task still queued would be run by the current drainer.
    CountDownLatch last = new CountDownLatch(1);
    ex.execute(last::countDown);
    last.await();
    assertThat(overlaps).hasValue(0);
    assertThat(outOfOrder[0]).isZero();
    ex.execute(() -> assertThat(total[0]).isEqualTo(threads * perThread));
    assertThat(failures).isEmpty();
  }
}
