package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.queue.ClassScheduler.Lane;
import io.sluice.core.queue.ClassScheduler.QueueClass;
import io.sluice.core.time.FakeTicker;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ClassSchedulerTest {
  private static final long SEC = 1_000_000_000L;
  private static final int INTERACTIVE = 0;
  private static final int AGENT = 1;
  private static final int BATCH = 2;

  private final FakeTicker ticker = new FakeTicker();
  private long nextId = 1;

  private static TenantFairQueue<String> queue() {
    return new TenantFairQueue<>(new QueueBounds(10_000, 1000, 60 * SEC, 1.0));
  }

  /** interactive 50% (borrows), agent 30% (borrows), batch 20% (borrows). */
  private ClassScheduler<String> scheduler(boolean batchBorrows) {
    return new ClassScheduler<>(
        List.of(
            new QueueClass<>("interactive", 0, 0.5, true, queue()),
            new QueueClass<>("agent", 1, 0.3, true, queue()),
            new QueueClass<>("batch", 2, 0.2, batchBorrows, queue())));
  }

  private QueuedItem<String> item(String tenant, long work) {
    long now = ticker.nanos();
    return new QueuedItem<>(nextId++, tenant, 1, work, now, now + 30 * SEC, now + 40 * SEC, tenant);
  }

  private void enqueue(ClassScheduler<String> s, int k, QueuedItem<String> item) {
    assertThat(s.queueClass(k).queue().offer(item, ticker.nanos()))
        .isInstanceOf(Offer.Accepted.class);
  }

  @Test
  void drain_interactiveWaitsWhileBatchBorrowedAll_eachReleaseGoesToInteractiveUntilReserve() {
    ClassScheduler<String> s = scheduler(true);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    for (int i = 0; i < 10; i++) {
      enqueue(s, BATCH, item("b", 10));
    }
    assertThat(s.drain(ticker.nanos(), ledger).admitted()).hasSize(10); // batch borrows all 100
    for (int i = 0; i < 8; i++) {
      enqueue(s, INTERACTIVE, item("i", 10));
      enqueue(s, BATCH, item("b", 10));
    }

    for (int release = 1; release <= 5; release++) {
      ledger.release(0); // a batch item finishes
      ClassScheduler.Drain<String> d = s.drain(ticker.nanos(), ledger);
      assertThat(d.admitted())
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.classIndex()).isEqualTo(INTERACTIVE);
                assertThat(a.lane()).isEqualTo(Lane.RESERVED);
              });
      assertThat(ledger.inFlightWorkUnits(INTERACTIVE)).isEqualTo(10L * release);
    }
    // interactive is at its reserve (50); it borrows the next release ahead of batch
    ledger.release(0);
    ClassScheduler.Drain<String> d = s.drain(ticker.nanos(), ledger);
    assertThat(d.admitted())
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.classIndex()).isEqualTo(INTERACTIVE);
              assertThat(a.lane()).isEqualTo(Lane.BORROWED);
            });
  }

  @Test
  void drain_classWithoutBorrow_neverExceedsItsReserve() {
    ClassScheduler<String> s = scheduler(false);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    for (int i = 0; i < 10; i++) {
      enqueue(s, BATCH, item("b", 10));
    }

    ClassScheduler.Drain<String> d = s.drain(ticker.nanos(), ledger);

    assertThat(d.admitted()).hasSize(2);
    assertThat(ledger.inFlightWorkUnits(BATCH)).isEqualTo(20);
    assertThat(s.queueClass(BATCH).queue().depth()).isEqualTo(8);
  }

  @Test
  void drain_higherRankBorrowerDoesNotFit_lowerRankDoesNotOvertake() {
    ClassScheduler<String> s = scheduler(true);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    enqueue(s, INTERACTIVE, item("i", 50));
    enqueue(s, INTERACTIVE, item("i", 40)); // needs to borrow 40 of the 50 the others leave idle
    enqueue(s, AGENT, item("a", 30));
    enqueue(s, BATCH, item("b", 20));
    enqueue(s, BATCH, item("b", 10));

    ClassScheduler.Drain<String> d = s.drain(ticker.nanos(), ledger);

    // reserves first: interactive 50, agent 30, batch 20 = 100: nothing left to lend
    assertThat(d.admitted())
        .extracting(ClassScheduler.Admitted::classIndex)
        .containsExactly(INTERACTIVE, AGENT, BATCH);
    ledger.release(2); // batch's 20 ends
    d = s.drain(ticker.nanos(), ledger);
    // batch has a waiting 10 within its reserve: it takes 10; 10 idle; interactive's 40 does not
    // fit, and batch may not borrow past it
    assertThat(d.admitted()).extracting(ClassScheduler.Admitted::classIndex).containsExactly(BATCH);
    assertThat(ledger.free()).isEqualTo(10);
  }

  @Test
  void startLane_arrivalWithHigherRankWaiting_mustQueue() {
    ClassScheduler<String> s = scheduler(true);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    enqueue(s, AGENT, item("a", 10));

    assertThat(s.hasWaitingAtOrAbove(0)).isFalse();
    assertThat(s.hasWaitingAtOrAbove(1)).isTrue();
    assertThat(s.startLane(BATCH, 5, ledger)).isEmpty();
    assertThat(s.startLane(AGENT, 5, ledger)).isEmpty();
    assertThat(s.startLane(INTERACTIVE, 5, ledger)).contains(Lane.RESERVED);
    // agent waits below its reserve: min(headroom 30, queued 10) = 10 is protected
    assertThat(s.startLane(INTERACTIVE, 90, ledger)).contains(Lane.BORROWED);
    assertThat(s.startLane(INTERACTIVE, 91, ledger)).isEmpty();
  }

  @Test
  void drain_expiredItems_reportedSeparatelyAndNeverAdmitted() {
    ClassScheduler<String> s = scheduler(true);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    long now = ticker.nanos();
    QueuedItem<String> stale = new QueuedItem<>(1, "t", 1, 10, now, now + SEC, now + SEC, "stale");
    QueuedItem<String> fresh =
        new QueuedItem<>(2, "t", 1, 10, now, now + 9 * SEC, now + 9 * SEC, "f");
    enqueue(s, AGENT, stale);
    enqueue(s, AGENT, fresh);
    assertThat(s.nextExpiryNanos()).hasValue(now + SEC);

    ClassScheduler.Drain<String> d = s.drain(now + SEC, ledger);

    assertThat(d.expired()).containsExactly(new ClassScheduler.Expired<>(AGENT, stale));
    assertThat(d.admitted())
        .containsExactly(new ClassScheduler.Admitted<>(AGENT, fresh, Lane.RESERVED));
  }

  @Test
  void drain_ledgerRefuses_itemStaysQueued() {
    ClassScheduler<String> s = scheduler(true);
    FakeLedger ledger = new FakeLedger(100, 3);
    ledger.attach(s);
    enqueue(s, AGENT, item("a", 10));
    ledger.refuseNext = 2;

    assertThat(s.drain(ticker.nanos(), ledger).admitted()).isEmpty();
    assertThat(s.queueClass(AGENT).queue().depth()).isEqualTo(1);
    assertThat(s.drain(ticker.nanos(), ledger).admitted()).hasSize(1);
  }

  /** Two classes of one rank, listed in either order: what is lent goes by arrival. */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void drain_equalRank_lendsByArrivalNotByListOrder(boolean batchListedFirst) {
    QueueClass<String> interactive = new QueueClass<>("interactive", 0, 0.0, true, queue());
    QueueClass<String> batch = new QueueClass<>("batch", 0, 0.0, true, queue());
    ClassScheduler<String> s =
        new ClassScheduler<>(
            batchListedFirst ? List.of(batch, interactive) : List.of(interactive, batch));
    int i = batchListedFirst ? 1 : 0;
    int b = 1 - i;
    FakeLedger ledger = new FakeLedger(10, 2);
    ledger.attach(s);
    ledger.admitDirect(b, item("filler", 10), Lane.BORROWED); // the pool is full
    // arrivals alternate, interactive first: i1 b1 i2 b2 i3 b3
    for (int n = 0; n < 3; n++) {
      enqueue(s, i, item("i", 10));
      ticker.advanceNanos(1);
      enqueue(s, b, item("b", 10));
      ticker.advanceNanos(1);
    }
    StringBuilder served = new StringBuilder();
    for (int n = 0; n < 6; n++) {
      ledger.release(0);
      List<ClassScheduler.Admitted<String>> started = s.drain(ticker.nanos(), ledger).admitted();
      assertThat(started).hasSize(1);
      served.append(started.get(0).item().payload());
    }
    assertThat(served.toString()).isEqualTo("ibibib");
  }

  /** Equal rank, each class within its reserve: both reserves hold, whatever the list order. */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void drain_equalRank_reservedStartsByArrival(boolean batchListedFirst) {
    QueueClass<String> interactive = new QueueClass<>("interactive", 0, 0.5, true, queue());
    QueueClass<String> batch = new QueueClass<>("batch", 0, 0.5, true, queue());
    ClassScheduler<String> s =
        new ClassScheduler<>(
            batchListedFirst ? List.of(batch, interactive) : List.of(interactive, batch));
    int i = batchListedFirst ? 1 : 0;
    int b = 1 - i;
    FakeLedger ledger = new FakeLedger(20, 2);
    ledger.attach(s);
    enqueue(s, i, item("i", 10));
    ticker.advanceNanos(1);
    enqueue(s, b, item("b", 10));
    ticker.advanceNanos(1);
    enqueue(s, b, item("b", 10));
    List<ClassScheduler.Admitted<String>> started = s.drain(ticker.nanos(), ledger).admitted();
    assertThat(started).extracting(a -> a.item().payload()).containsExactly("i", "b");
    assertThat(started).extracting(ClassScheduler.Admitted::lane).containsOnly(Lane.RESERVED);
  }

  @Test
  void constructor_reservesOverOne_throws() {
    assertThatThrownBy(
            () ->
                new ClassScheduler<>(
                    List.of(
                        new QueueClass<>("a", 0, 0.7, true, queue()),
                        new QueueClass<>("b", 1, 0.4, true, queue()))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reservedShare");
  }

  /** The worked example of docs/scheduling.md §7. */
  @Test
  void drain_docsWorkedExample_matchesDocumentedNumbers() {
    ClassScheduler<String> s =
        new ClassScheduler<>(
            List.of(
                new QueueClass<>(
                    "interactive",
                    0,
                    0.5,
                    true,
                    new TenantFairQueue<>(new QueueBounds(20_000, 500, 5 * SEC, 0.5))),
                new QueueClass<>("agent", 1, 0.3, true, queue()),
                new QueueClass<>("batch", 2, 0.2, true, queue())));
    FakeLedger ledger = new FakeLedger(10_000, 3);
    ledger.attach(s);
    long now = ticker.nanos();
    for (int i = 0; i < 4; i++) {
      ledger.admitDirect(INTERACTIVE, item("x", 1_000), Lane.RESERVED);
    }
    for (int i = 0; i < 3; i++) {
      ledger.admitDirect(AGENT, item("y", 1_000), Lane.RESERVED);
    }
    ledger.admitDirect(BATCH, item("z", 1_000), Lane.RESERVED);
    ledger.admitDirect(BATCH, item("z", 1_000), Lane.RESERVED);
    ledger.admitDirect(BATCH, item("z", 1_000), Lane.BORROWED);
    TenantFairQueue<String> interactive = s.queueClass(INTERACTIVE).queue();
    QueuedItem<String> acme1 =
        new QueuedItem<>(101, "acme", 2, 1_000, now, now + 5 * SEC, now + 9 * SEC, "acme1");
    QueuedItem<String> acme2 =
        new QueuedItem<>(102, "acme", 2, 1_000, now, now + 5 * SEC, now + 9 * SEC, "acme2");
    QueuedItem<String> free1 =
        new QueuedItem<>(103, "free-co", 1, 1_000, now, now + 5 * SEC, now + 9 * SEC, "free1");
    interactive.offer(acme1, now);
    interactive.offer(acme2, now);
    interactive.offer(free1, now);

    WaitPredictor predictor =
        new WaitPredictor(new WaitPredictor.Config(10_000, 10 * SEC, 20 * SEC, 50, 0));
    long ms = 1_000_000L;
    for (int i = 0; i <= 600; i++) {
      predictor.onCompletion(400, now + i * 100 * ms); // 4,000 units/s
    }
    for (int i = 0; i < 50; i++) {
      predictor.onServiceTime(1_000, 2 * SEC); // 2 ms per unit
    }
    long wait = predictor.predictWaitNanos(interactive.queuedWorkAhead("free-co", 1), 1_500, 0);
    long service = predictor.expectedServiceNanos(1_500);
    assertThat(interactive.queuedWorkAhead("free-co", 1)).isEqualTo(3_000);
    assertThat(wait).isBetween(1_100 * ms, 1_150 * ms);
    assertThat(service).isEqualTo(3 * SEC);
    assertThat(WaitPredictor.feasible(now, now + 10 * SEC, 5 * SEC, wait, service)).isTrue();
    assertThat(WaitPredictor.feasible(now, now + 4 * SEC, 5 * SEC, wait, service)).isFalse();
    QueuedItem<String> free2 =
        new QueuedItem<>(
            104,
            "free-co",
            1,
            1_500,
            now,
            QueuedItem.expiryNanos(now, 5 * SEC, now + 10 * SEC, service),
            now + 10 * SEC,
            "free2");
    assertThat(interactive.offer(free2, now)).isEqualTo(new Offer.Accepted(3, 3_000));

    ledger.release(ledger.running.size() - 1); // a batch item finishes
    assertThat(s.drain(now, ledger).admitted())
        .containsExactly(new ClassScheduler.Admitted<>(INTERACTIVE, acme1, Lane.RESERVED));
    ledger.release(4); // an agent item finishes
    assertThat(s.drain(now, ledger).admitted())
        .containsExactly(new ClassScheduler.Admitted<>(INTERACTIVE, free1, Lane.BORROWED));
    RetryAfter retry = new RetryAfter(1, 300, 0.2, () -> 0.0);
    assertThat(retry.seconds(predictor.predictedDrainNanos(4_500))).isEqualTo(2);
  }
}
