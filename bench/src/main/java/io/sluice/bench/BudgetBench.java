package io.sluice.bench;

import io.sluice.core.admission.Reason;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Prices;
import io.sluice.core.budget.Terms;
import io.sluice.core.budget.TokenUse;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.time.Ticker;
import io.sluice.store.memory.InMemoryBudgetStore;
import io.sluice.store.redis.RedisBudgetStore;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisSettings;
import java.time.Clock;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The budgets' rule at the store level (no Envoy, no upstream): {@code budget-burst}, replicas of
 * {@link BudgetBook} on one Redis under a burst of large-{@code max_tokens} requests; {@code
 * budget-pacing}, a tenant offering 3x its budget's rate over a compressed month on a fake clock.
 * docs/benchmarks.md, "Budgets".
 */
final class BudgetBench {
  private BudgetBench() {}

  @SuppressWarnings("NullAway") // failureMode null: the store's own (a @Nullable component)
  static BudgetPolicy policy(Budget b) {
    return new BudgetPolicy(
        true,
        402,
        Duration.ofSeconds(30),
        100_000,
        null,
        0.1,
        Prices.NONE,
        Map.of("pro", List.of(b)),
        Map.of(),
        Map.of(),
        Map.of(),
        List.of(),
        BudgetPolicy.Degrade.OFF);
  }

  static TokenEstimate estimate(long in, long out) {
    return new TokenEstimate(in, out, "bytes", null, "m", false, false, FanOut.NONE, -1);
  }

  @Command(
      name = "budget-burst",
      description =
          "Replicas of the budget book on the Redis at 127.0.0.1:6379: 200 concurrent requests"
              + " (max_tokens 4096, reserved at the learned reserve) on a budget sized for ~100"
              + " answers; refusals below 90 % of the budget, final overspend.")
  static final class Burst implements Callable<Integer> {
    @Option(names = "--replicas", defaultValue = "3")
    int replicas;

    @Option(names = "--requests", defaultValue = "200")
    int requests;

    @Option(names = "--port", defaultValue = "6379")
    int port;

    @Option(names = "--timeout-ms", defaultValue = "1000", description = "Redis command timeout")
    long timeoutMs;

    @Override
    public Integer call() throws Exception {
      long answer = 200 + 300; // input 200, output ~300 on average
      long limit = 100 * answer;
      Budget b =
          new Budget(
              "burst",
              Budget.Meter.TOKENS,
              new Period.Calendar(Period.Unit.MONTH, ZoneOffset.UTC, DayOfWeek.MONDAY),
              new Terms(limit, List.of(), 0),
              null);
      String prefix = "sluicebench-" + System.nanoTime() + "-";
      List<RedisConnection> conns = new ArrayList<>();
      List<BudgetBook> books = new ArrayList<>();
      AtomicLong storeFailures = new AtomicLong();
      BudgetEvents failures =
          new BudgetEvents.Ignoring() {
            @Override
            public void storeFailed(BudgetPolicy.Applied a, boolean allowed) {
              storeFailures.incrementAndGet();
            }
          };
      ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
      for (int i = 0; i < replicas; i++) {
        RedisConnection c =
            new RedisConnection(
                RedisSettings.local(port).withCommandTimeout(Duration.ofMillis(timeoutMs)),
                Ticker.system());
        conns.add(c);
        BudgetStore s = new RedisBudgetStore(c);
        books.add(
            new BudgetBook(
                policy(b),
                s,
                null,
                0.1,
                prefix,
                BudgetBook.FailureMode.OPEN,
                ms -> {
                  CompletableFuture<Void> f = new CompletableFuture<>();
                  timer.schedule(() -> f.complete(null), ms, TimeUnit.MILLISECONDS);
                  return f;
                },
                Clock.systemUTC(),
                failures,
                new WriteBack(policy(b).maxEntries(), failures),
                new LastRemaining(policy(b).maxEntries())));
      }
      AtomicLong spent = new AtomicLong();
      AtomicLong refusedBelow90 = new AtomicLong();
      AtomicLong refused = new AtomicLong();
      AtomicLong admitted = new AtomicLong();
      SplittableRandom r = new SplittableRandom(35);
      List<CompletableFuture<Void>> all = new ArrayList<>();
      long start = System.nanoTime();
      for (int i = 0; i < requests; i++) {
        BudgetBook book = books.get(i % replicas);
        long out = r.nextLong(100, 501); // what the answer really produces
        long runMs = r.nextLong(200, 1500);
        // reserved: input 200 + the learned reserve 400 (the 4096 cap is not what is reserved)
        all.add(
            book.reserve("acme", "pro", "chat", estimate(200, 400))
                .toCompletableFuture()
                .thenCompose(
                    a -> {
                      if (a instanceof BudgetBook.Answer.Refuse f) {
                        refused.incrementAndGet();
                        if (f.reason() == Reason.BUDGET_EXHAUSTED && spent.get() < limit * 0.9) {
                          refusedBelow90.incrementAndGet();
                        } else if (f.reason() != Reason.BUDGET_EXHAUSTED) {
                          refusedBelow90.incrementAndGet(); // a wait that ran out, below the limit
                        }
                        return CompletableFuture.completedFuture(null);
                      }
                      admitted.incrementAndGet();
                      BudgetNote n = ((BudgetBook.Answer.Admit) a).note();
                      CompletableFuture<Void> done = new CompletableFuture<>();
                      timer.schedule(
                          () -> {
                            spent.addAndGet(200 + out);
                            book.settle(n, new TokenUse(200, out, 0));
                            done.complete(null);
                          },
                          runMs,
                          TimeUnit.MILLISECONDS);
                      return done;
                    }));
      }
      CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).get(5, TimeUnit.MINUTES);
      long ms = (System.nanoTime() - start) / 1_000_000;
      System.out.printf(
          "budget-burst: replicas %d, requests %d, budget %d tokens (~100 answers)%n"
              + "  admitted %d, refused %d (of which below 90%% of the budget: %d)%n"
              + "  spent %d = %.2f%% of the budget (overspend %.2f%%), %d ms, store failures %d%n",
          replicas,
          requests,
          limit,
          admitted.get(),
          refused.get(),
          refusedBelow90.get(),
          spent.get(),
          100.0 * spent.get() / limit,
          Math.max(0, 100.0 * (spent.get() - limit) / limit),
          ms,
          storeFailures.get());
      timer.shutdownNow();
      conns.forEach(RedisConnection::close);
      return 0;
    }
  }

  @Command(
      name = "budget-pacing",
      description =
          "A tenant offering 3x its budget's rate over a compressed 30-day month (fake clock, in"
              + " process): admitted spend per day, final spend against the budget.")
  static final class Pacing implements Callable<Integer> {
    @Option(names = "--paced", defaultValue = "true", arity = "1")
    boolean paced;

    @Override
    public Integer call() {
      long limit = 3_000_000; // tokens a month: 100,000 a day
      Instant t0 = Instant.parse("2026-11-01T00:00:00Z");
      AtomicLong now = new AtomicLong(t0.toEpochMilli());
      Clock clock =
          new Clock() {
            @Override
            public ZoneId getZone() {
              return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(ZoneId zone) {
              return this;
            }

            @Override
            public Instant instant() {
              return Instant.ofEpochMilli(now.get());
            }
          };
      Budget b =
          new Budget(
              "month",
              Budget.Meter.TOKENS,
              new Period.Calendar(Period.Unit.MONTH, ZoneOffset.UTC, DayOfWeek.MONDAY),
              new Terms(limit, List.of(0.8, 0.95), paced ? 5_000 : 0),
              null);
      BudgetBook book =
          new BudgetBook(
              policy(b),
              new InMemoryBudgetStore(10),
              null,
              0.1,
              "b_",
              BudgetBook.FailureMode.OPEN,
              ms -> {
                now.addAndGet(ms);
                return CompletableFuture.completedFuture(null);
              },
              clock,
              BudgetEvents.NONE,
              new WriteBack(policy(b).maxEntries(), BudgetEvents.NONE),
              new LastRemaining(policy(b).maxEntries()));
      long every = 9_600; // 1,000 tokens every 9.6 s: 9,000 a day... x 3 of 100,000/day
      every = 86_400_000L * 1_000 / (3 * 100_000);
      long[] perDay = new long[30];
      long spent = 0;
      long stopDay = -1;
      for (long t = t0.toEpochMilli(); t < t0.toEpochMilli() + 30L * 86_400_000L; t += every) {
        now.set(t);
        BudgetBook.Answer a =
            book.reserve("acme", "pro", "chat", estimate(400, 600)).toCompletableFuture().join();
        if (a instanceof BudgetBook.Answer.Admit ad) {
          book.settle(ad.note(), new TokenUse(400, 600, 0));
          spent += 1000;
          perDay[(int) ((t - t0.toEpochMilli()) / 86_400_000L)] += 1000;
        } else if (((BudgetBook.Answer.Refuse) a).reason() == Reason.BUDGET_EXHAUSTED
            && stopDay < 0) {
          stopDay = (t - t0.toEpochMilli()) / 86_400_000L + 1;
        }
      }
      System.out.printf(
          "budget-pacing (%s): budget %d tokens a 30-day month, offered 3x%n",
          paced ? "paced" : "not paced", limit);
      StringBuilder days = new StringBuilder("  admitted per day (k tokens):");
      for (long d : perDay) {
        days.append(' ').append(d / 1000);
      }
      System.out.println(days);
      chart(perDay, limit);
      System.out.printf(
          "  spent %d = %.2f%% of the budget; hard stop on day %s%n",
          spent, 100.0 * spent / limit, stopDay < 0 ? "none" : Long.toString(stopDay));
      return 0;
    }
  }

  /**
   * The chart of a pacing run, a line a day: what was admitted that day (the bar: one {@code #} per
   * 10,000 tokens, {@code |} at the budget's daily rate) and the spend so far against the budget
   * and against the even line (day / 30).
   */
  static void chart(long[] perDay, long limit) {
    System.out.println(
        "  day  admitted  spent/budget   even  admitted (# = 10k tokens, | = the budget's rate)");
    long rate = limit / perDay.length;
    long cumulative = 0;
    for (int d = 0; d < perDay.length; d++) {
      cumulative += perDay[d];
      StringBuilder bar = new StringBuilder();
      long cells = Math.max(perDay[d], rate) / 10_000;
      for (long c = 1; c <= cells; c++) {
        bar.append(c == rate / 10_000 ? '|' : c * 10_000 <= perDay[d] ? '#' : ' ');
      }
      System.out.printf(
          "  %3d  %7dk  %10.1f%%  %4.1f%%  %s%n",
          d + 1,
          perDay[d] / 1000,
          100.0 * cumulative / limit,
          100.0 * (d + 1) / perDay.length,
          bar.toString().stripTrailing());
    }
  }
}
