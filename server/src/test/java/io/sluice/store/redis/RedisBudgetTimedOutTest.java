package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.TestBudgets;
import io.sluice.core.budget.TokenUse;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.store.LocalRedis;
import io.sluice.store.MutableClock;
import io.sluice.store.RedisProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Calls that time out at the replica after they ran in Redis: a redis-server of the test's own,
 * stopped (SIGSTOP) while the calls are sent, so that they run when it resumes, after the replica
 * gave up on them (a 200 ms command timeout). The reservation ids make the write-back exact: a
 * reserve that ran late is taken back (0 leaked), a settle that ran late is not counted again (0
 * double-counted).
 */
class RedisBudgetTimedOutTest {
  private static final TokenEstimate E =
      new TokenEstimate(10, 10, "bytes", null, "m", false, false, FanOut.NONE, -1);

  private RedisProcess redis;
  private RedisPorts ports;

  @AfterEach
  void stop() throws Exception {
    if (ports != null) {
      ports.close();
    }
    if (redis != null) {
      redis.kill();
    }
  }

  private static BudgetNote admitted(BudgetBook b) throws Exception {
    BudgetBook.Answer a =
        b.reserve("acme", "pro", "chat", E).toCompletableFuture().get(10, TimeUnit.SECONDS);
    return ((BudgetBook.Answer.Admit) a).note();
  }

  @Test
  void timedOutAfterTheyRan_noLeak_noDoubleCount() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    ports = RedisPorts.failingFast(redis);
    RedisBudgetStore store = new RedisBudgetStore(ports.connection());
    MutableClock clock = new MutableClock(Instant.parse("2026-12-05T10:00:00Z"));
    BudgetPolicy p = TestBudgets.dailyPro(100_000, BudgetPolicy.Degrade.OFF);
    BudgetBook book =
        new BudgetBook(
            p,
            store,
            null,
            0.1,
            "to_",
            BudgetBook.FailureMode.OPEN,
            ms -> CompletableFuture.completedFuture(null),
            clock,
            BudgetEvents.NONE,
            new WriteBack(p.maxEntries(), BudgetEvents.NONE),
            new LastRemaining(p.maxEntries()));
    BudgetPolicy.Applied applied = p.budgetsFor("acme", "pro", "chat", "m").get(0);

    // three reservations on the store (20 each), settled while Redis is stopped: the settles time
    // out, and run when it resumes
    List<BudgetNote> held = new java.util.ArrayList<>();
    while (held.size() < 3) {
      BudgetNote n = admitted(book);
      if (n.reserved().get(0).where() == BudgetNote.Where.STORE) {
        held.add(n);
      } else {
        book.settle(n, null); // a slow answer on a loaded box: given back, by id
      }
    }
    redis.pause();
    for (BudgetNote n : held) {
      book.settle(n, new TokenUse(10, 5, 0)); // 15 spent each
    }
    // three reserves that time out (failure mode open: let through), and run when it resumes
    List<BudgetNote> open = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      BudgetNote n = admitted(book);
      assertThat(n.reserved().get(0).where()).isEqualTo(BudgetNote.Where.NONE);
      open.add(n);
    }
    Thread.sleep(400); // every call above has timed out
    for (BudgetNote n : open) {
      book.settle(n, new TokenUse(10, 2, 0)); // 12 spent each
    }
    redis.resume();

    // the store answers again: a request's round trip writes back what is owed, by id
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              BudgetNote n = admitted(book);
              book.settle(n, null);
              return n.reserved().get(0).where() == BudgetNote.Where.STORE
                  && book.writeBack().isEmpty();
            });
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              Ledger.State s = book.read(applied).toCompletableFuture().get(5, TimeUnit.SECONDS);
              assertThat(s.reserved()).as("units leaked (reserved, nothing running)").isZero();
              assertThat(s.spent()).as("spent: 3 x 15 + 3 x 12, each once").isEqualTo(81);
            });
    Thread.sleep(500); // nothing more arrives late
    Ledger.State s = book.read(applied).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(81, 0);
  }
}
