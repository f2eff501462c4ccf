package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.admission.Reason;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Prices;
import io.sluice.core.budget.Terms;
import io.sluice.core.budget.TokenUse;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.store.LocalRedis;
import io.sluice.store.MutableClock;
import io.sluice.store.RedisProcess;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The budgets on a redis-server of the test's own, killed mid-run: each failure mode answers as
 * configured (open: let through, nothing reserved; closed: 429 budget_paced; local: this replica's
 * share), every outage counted.
 */
class RedisBudgetOutageTest {
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

  @Test
  void redisKilled_eachFailureModeAnswers_andIsCounted() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    ports = RedisPorts.failingFast(redis);
    RedisBudgetStore store = new RedisBudgetStore(ports.connection());
    MutableClock clock = new MutableClock(Instant.parse("2026-12-05T10:00:00Z"));
    AtomicInteger failures = new AtomicInteger();
    BudgetEvents events =
        new BudgetEvents.Ignoring() {
          @Override
          public void storeFailed(BudgetPolicy.Applied a, boolean allowed) {
            failures.incrementAndGet();
          }
        };
    Budget daily =
        new Budget(
            "daily",
            Budget.Meter.TOKENS,
            new Period.Calendar(Period.Unit.DAY, ZoneOffset.UTC, DayOfWeek.MONDAY),
            new Terms(1000, List.of(), 0),
            null);
    BudgetPolicy p =
        new BudgetPolicy(
            true,
            402,
            Duration.ofSeconds(1),
            100,
            null,
            0.1,
            Prices.NONE,
            Map.of("pro", List.of(daily)),
            Map.of(),
            Map.of(),
            Map.of(),
            List.of(),
            BudgetPolicy.Degrade.OFF);
    java.util.function.Function<BudgetBook.FailureMode, BudgetBook> book =
        mode ->
            new BudgetBook(
                p,
                store,
                new InMemoryBudgetStore(100),
                0.1,
                "t_",
                mode,
                ms -> CompletableFuture.completedFuture(null),
                clock,
                events,
                new WriteBack(p.maxEntries(), events),
                new LastRemaining(p.maxEntries()));
    TokenEstimate e = new TokenEstimate(10, 10, "bytes", null, "m", false, false, FanOut.NONE, -1);
    BudgetBook.Answer up =
        book.apply(BudgetBook.FailureMode.OPEN)
            .reserve("acme", "pro", "chat", e)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
    BudgetNote n = ((BudgetBook.Answer.Admit) up).note();
    assertThat(n.reserved().get(0).where()).isEqualTo(BudgetNote.Where.STORE);
    book.apply(BudgetBook.FailureMode.OPEN).settle(n, new TokenUse(10, 10, 0));

    redis.kill();
    BudgetBook.Answer open =
        book.apply(BudgetBook.FailureMode.OPEN)
            .reserve("acme", "pro", "chat", e)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
    assertThat(((BudgetBook.Answer.Admit) open).note().reserved().get(0).where())
        .isEqualTo(BudgetNote.Where.NONE);
    BudgetBook.Answer closed =
        book.apply(BudgetBook.FailureMode.CLOSED)
            .reserve("acme", "pro", "chat", e)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
    assertThat(((BudgetBook.Answer.Refuse) closed).reason()).isEqualTo(Reason.BUDGET_PACED);
    assertThat(((BudgetBook.Answer.Refuse) closed).status()).isEqualTo(429);
    BudgetBook local = book.apply(BudgetBook.FailureMode.LOCAL);
    int admitted = 0;
    for (int i = 0; i < 8; i++) { // a 10 % share: 100 tokens, 5 requests of 20
      BudgetBook.Answer a =
          local.reserve("acme", "pro", "chat", e).toCompletableFuture().get(10, TimeUnit.SECONDS);
      if (a instanceof BudgetBook.Answer.Admit ad) {
        assertThat(ad.note().reserved().get(0).where()).isEqualTo(BudgetNote.Where.LOCAL);
        local.settle(ad.note(), new TokenUse(10, 10, 0));
        admitted++;
      }
    }
    assertThat(admitted).isEqualTo(5);
    assertThat(failures.get()).isGreaterThanOrEqualTo(10);
  }
}
