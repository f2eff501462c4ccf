package io.sluice.feature.budget;

import io.sluice.config.BudgetsSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetCheck;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetSettler;
import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.Delay;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.time.Ticker;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.observability.BudgetMetrics;
import io.sluice.observability.BudgetRecorder;
import io.sluice.store.memory.InMemoryBudgetStore;
import io.sluice.store.redis.RedisBudgetStore;
import io.sluice.store.redis.RedisConnection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Budgets over billing periods (docs/configuration.md, "Budgets"), registered in one place: its
 * section ({@link BudgetsSection}, {@code budgets}), its store port ({@link #BUDGETS}: in memory,
 * bounded by {@code budgets.maxEntries}; on Redis, exact across replicas) and the local share a
 * replica spends while the store is down ({@link #LOCAL_SHARE}), its check ({@link BudgetCheck},
 * after the tenant's tokens per minute, in the chain only while {@code budgets.enabled} and a
 * budget is configured), its listener ({@link BudgetSettler}: every end path reconciled once) and
 * its meters and decision-record part ({@link BudgetRecorder} on the process's {@link
 * BudgetMetrics}). What a store outage leaves owed to the shared store is kept over a reload,
 * written on an idle timer while anything is owed and at drain (the port's {@code close}); so is
 * what the store last said remains of each budget (the local share's base).
 */
public final class BudgetFeature implements Feature {
  /** The budgets' state: shared exactly when the backend is. */
  public static final StorePort<BudgetStore> BUDGETS = port("budgets", true);

  /** What this replica spends while the shared store does not answer (failure mode local). */
  public static final StorePort<BudgetStore> LOCAL_SHARE = port("budgets-local", false);

  /**
   * A budgets port: in memory bounded by {@code budgets.maxEntries}; on Redis the shared store when
   * {@code shared}, else still this process's own.
   */
  private static StorePort<BudgetStore> port(String name, boolean shared) {
    return new StorePort<>() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public BudgetStore memory(Ticker ticker, boolean isolated) {
        return new InMemoryBudgetStore(isolated ? 10_000 : BudgetPolicy.DEFAULTS.maxEntries());
      }

      @Override
      public BudgetStore redis(RedisConnection redis) {
        return shared ? new RedisBudgetStore(redis) : memory(Ticker.system(), false);
      }

      @Override
      public void configure(BudgetStore port, SluiceConfig config) {
        if (port instanceof InMemoryBudgetStore m) { // Redis keeps what its keys' TTLs say
          m.resize(config.section(BudgetsSection.SECTION).maxEntries());
        }
      }

      @Override
      public void close(BudgetStore port) {
        HEARD.remove(port);
        WriteBack w = OWED.remove(port); // its timer holds the store: let both go
        if (w == null) {
          return;
        }
        try { // the drain: what is owed written while the store still answers
          w.drain().get(DRAIN_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
          // what was not written stays counted in sluice_budget_write_back_owed until the end
        }
      }
    };
  }

  /** How often the write-back is flushed while anything is owed, traffic or not. */
  static final long IDLE_FLUSH_MILLIS = 1000;

  /** How long the drain waits for what is owed to be written. */
  static final long DRAIN_SECONDS = 3;

  /**
   * What each shared store is owed (the write-back), kept from one snapshot to the next: a hot
   * reload during an outage keeps it; the store port writes it at drain. Weak keys: a store of a
   * process that stopped goes with it.
   */
  private static final Map<BudgetStore, WriteBack> OWED =
      Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * What each shared store last said remains of each budget (the local share's base), kept from one
   * snapshot to the next as {@link #OWED} is: a hot reload during an outage keeps the allowance.
   */
  private static final Map<BudgetStore, LastRemaining> HEARD =
      Collections.synchronizedMap(new WeakHashMap<>());

  /** What {@code store} is owed now (null: nothing made for it yet); tests. */
  @org.jspecify.annotations.Nullable
  WriteBack owedTo(BudgetStore store) {
    return OWED.get(store);
  }

  /** What {@code store} last said remains (null: nothing made for it yet); tests. */
  @org.jspecify.annotations.Nullable
  LastRemaining heardFrom(BudgetStore store) {
    return HEARD.get(store);
  }

  /** The process's timer for requests waiting on a budget: one daemon thread, made on first use. */
  private static final class Timer {
    static final ScheduledExecutorService INSTANCE =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread th = new Thread(r, "sluice-budget-timer");
              th.setDaemon(true);
              return th;
            });
  }

  private static Delay delay() {
    return millis -> {
      CompletableFuture<Void> f = new CompletableFuture<>();
      var unused = Timer.INSTANCE.schedule(() -> f.complete(null), millis, TimeUnit.MILLISECONDS);
      return f;
    };
  }

  @Override
  public List<StorePort<?>> storePorts() {
    return List.of(BUDGETS, LOCAL_SHARE);
  }

  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    SluiceConfig config = s.config();
    BudgetPolicy policy = config.section(BudgetsSection.SECTION);
    BudgetMetrics meters = s.metrics().part(BudgetMetrics.class, BudgetMetrics::new);
    BudgetBook.FailureMode mode = policy.failureMode();
    if (mode == null) {
      mode =
          config.quotas().failureMode() == SluiceConfig.Quotas.FailureMode.CLOSED
              ? BudgetBook.FailureMode.CLOSED
              : BudgetBook.FailureMode.OPEN;
    }
    BudgetStore shared = s.stores().port(BUDGETS);
    WriteBack writeBack =
        OWED.computeIfAbsent(
            shared,
            k -> {
              WriteBack w = new WriteBack(policy.maxEntries(), meters);
              w.flushWhileOwed(k, s.clock(), delay(), IDLE_FLUSH_MILLIS); // traffic or not
              return w;
            });
    BudgetBook book =
        new BudgetBook(
            policy,
            shared,
            s.stores().port(LOCAL_SHARE),
            policy.localShare(),
            config.quotas().keyPrefix(),
            mode,
            delay(),
            s.clock(),
            meters,
            writeBack,
            HEARD.computeIfAbsent(shared, k -> new LastRemaining(policy.maxEntries())));
    out.check(BudgetCheck.ORDER, BudgetCheck.factory(book));
    BudgetRecorder recorder = new BudgetRecorder(meters);
    out.listener(new BudgetSettler(book)).listener(recorder).recordPart(recorder);
  }
}
