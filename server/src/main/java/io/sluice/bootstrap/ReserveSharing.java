package io.sluice.bootstrap;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.ReserveSnapshot;
import io.sluice.core.estimate.ReserveStore;
import io.sluice.core.time.Ticker;
import io.sluice.feature.nativeai.NativeMetadataFeature;
import io.sluice.observability.MetricNames;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A learner's state shared by the replicas through the store they share, the {@link ReserveStore}
 * port (docs/estimation.md, "Shared across replicas and restarts"): the learned output reserve
 * ({@link #reserves}) and the learned bytes-per-token ({@link #bytesPerToken}), each under its own
 * namespace. At start the replica reads every key the others learned for its pools before it
 * reports ready (bounded by {@code server.warmup.storeTimeout}), then every {@code shareInterval}
 * sends what it learned since and adopts the keys anyone wrote since; at shutdown it sends what is
 * left, so a restart loses at most nothing it saw. Only with a store the replicas share (Redis): in
 * memory the learner itself outlives reloads.
 */
final class ReserveSharing implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReserveSharing.class);

  /** Keys written this long before the last pull are read again: writes racing a pull. */
  static final long OVERLAP_MILLIS = 2_000;

  /**
   * What is shared: a learner's name (logs), its label (the metrics' {@code learner}), its policy
   * (read at each exchange), its additions since the last exchange, and where the shared keys go.
   */
  record Learner(
      String name,
      String label,
      Supplier<Policy> policy,
      Supplier<List<ReserveSnapshot>> additions,
      Consumer<ReserveSnapshot> adopt) {}

  /**
   * @param windowMillis the stored state halves every window ({@link ReserveStore#decay})
   * @param maxKeys keys the store keeps per pool
   */
  record Policy(boolean enabled, long intervalMillis, long windowMillis, int maxKeys) {}

  /** The learned output reserve: its own settings ({@code estimation.learnedReserve}). */
  static Learner reserves(OutputReserves r) {
    return new Learner(
        "learned output reserve",
        "output_reserve",
        () -> {
          OutputReserves.Settings s = r.settings();
          return new Policy(
              s.enabled(), s.shareIntervalMillis(), s.shareWindowMillis(), s.maxKeys());
        },
        r::takeAdditions,
        r::adopt);
  }

  /**
   * The learned bytes-per-token: exchanged with the reserves' {@code shareInterval}, the stored
   * entries (one per pool, model and tenant) halving every {@code halfLife}, at most {@code
   * maxKeys} entries per pool.
   */
  static Learner bytesPerToken(LearnedBytesPerToken l, OutputReserves interval, Ticker ticker) {
    return new Learner(
        "learned bytes-per-token",
        "bytes_per_token",
        () -> {
          LearnedBytesPerToken.Settings s = l.settings();
          return new Policy(
              s.enabled(),
              interval.settings().shareIntervalMillis(),
              s.halfLifeMillis(),
              s.maxKeys());
        },
        l::takeAdditions,
        k -> l.adopt(k, ticker.nanos()));
  }

  private final Learner learner;
  private final ReserveStore store;
  private final String namespace;
  private final Supplier<Collection<String>> pools;
  private final AtomicBoolean busy = new AtomicBoolean();
  private final AtomicLong exchanges = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong adopted = new AtomicLong();
  private volatile long sinceMillis; // the store's clock: keys written since are read
  private volatile @Nullable ScheduledExecutorService timer;
  private volatile boolean closed;

  ReserveSharing(
      Learner learner, ReserveStore store, String namespace, Supplier<Collection<String>> pools) {
    this.learner = learner;
    this.store = store;
    this.namespace = namespace;
    this.pools = pools;
  }

  /** Namespace suffix of the learned bytes-per-token's entries: apart from the reserves' index. */
  static final String BYTES_PER_TOKEN_NAMESPACE = "bpt_";

  /**
   * The process's learners shared through the stores' {@link ReserveStore} (none with the memory
   * backend): the output reserves under {@code keyPrefix}, the bytes-per-token under {@code
   * keyPrefix + "bpt_"} (its own index: its entries never crowd out the reserves').
   */
  static List<ReserveSharing> all(
      Stores stores,
      OutputReserves reserves,
      String keyPrefix,
      Ticker ticker,
      Supplier<Collection<String>> pools) {
    ReserveStore store = stores.reserves();
    if (store == null) {
      return List.of();
    }
    LearnedBytesPerToken bpt = stores.port(NativeMetadataFeature.BYTES_PER_TOKEN);
    return List.of(
        new ReserveSharing(reserves(reserves), store, keyPrefix, pools),
        new ReserveSharing(
            bytesPerToken(bpt, reserves, ticker),
            store,
            keyPrefix + BYTES_PER_TOKEN_NAMESPACE,
            pools));
  }

  /**
   * Reads the shared state (waiting at most {@code timeout}), then exchanges every {@code
   * shareInterval} on {@code timer}.
   */
  void start(ScheduledExecutorService timer, Duration timeout) {
    this.timer = timer;
    long t0 = System.nanoTime();
    try {
      int keys = exchange().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      LOG.info(
          "{}: {} keys read from the shared store in {} ms",
          learner.name(),
          keys,
          (System.nanoTime() - t0) / 1_000_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn(
          "{}: shared state not read at start ({}); starting from priors,"
              + " retried every shareInterval",
          learner.name(),
          e.toString());
    }
    schedule();
  }

  private void schedule() {
    ScheduledExecutorService t = timer;
    if (t == null || closed) {
      return;
    }
    long every = learner.policy().get().intervalMillis();
    try {
      var unused = t.schedule(this::tick, every, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // shutting down
    }
  }

  private void tick() {
    try {
      var unused = exchange();
    } catch (RuntimeException e) {
      LOG.warn("{}: {}", learner.name(), e.toString());
    } finally {
      schedule();
    }
  }

  /**
   * One exchange: this replica's additions out, the keys written since the last one in; answers how
   * many keys were adopted (0 when one is already running or learning is off).
   */
  CompletionStage<Integer> exchange() {
    Policy p = learner.policy().get();
    if (!p.enabled() || !busy.compareAndSet(false, true)) {
      return CompletableFuture.completedFuture(0);
    }
    List<ReserveSnapshot> additions = learner.additions().get();
    long since = sinceMillis;
    CompletionStage<ReserveStore.Pull> answer;
    try {
      answer =
          store.exchange(
              namespace,
              pools.get(),
              additions,
              since <= 0 ? 0 : since - OVERLAP_MILLIS,
              p.windowMillis(),
              p.maxKeys());
    } catch (RuntimeException e) {
      busy.set(false);
      throw e;
    }
    return answer.handle(
        (pull, e) -> {
          busy.set(false);
          exchanges.incrementAndGet();
          if (e != null) {
            // the additions stay learned here, only not shared
            if (failures.incrementAndGet() % 60 == 1) {
              LOG.warn("{}: exchange failed: {}", learner.name(), e.toString());
            }
            return 0;
          }
          for (ReserveSnapshot k : pull.changed()) {
            learner.adopt().accept(k);
          }
          adopted.addAndGet(pull.changed().size());
          sinceMillis = pull.nowMillis();
          return pull.changed().size();
        });
  }

  /** Exchanges done (failed ones included) and failed, since start. */
  long exchanges() {
    return exchanges.get();
  }

  long failures() {
    return failures.get();
  }

  /**
   * Its counters on {@code registry} (docs/metrics.md, "Learned state shared by the replicas"):
   * exchanges with the store by result ({@code ok}, {@code failed}) and the keys adopted from it,
   * labelled by the learner.
   */
  void bindTo(MeterRegistry registry) {
    String l = learner.label();
    FunctionCounter.builder(
            MetricNames.LEARNED_SHARE_EXCHANGES, this, s -> s.exchanges() - s.failures())
        .tags("learner", l, "result", "ok")
        .description("exchanges of a learner's state with the store the replicas share")
        .register(registry);
    FunctionCounter.builder(MetricNames.LEARNED_SHARE_EXCHANGES, this, s -> s.failures())
        .tags("learner", l, "result", "failed")
        .description("exchanges of a learner's state with the store the replicas share")
        .register(registry);
    FunctionCounter.builder(MetricNames.LEARNED_SHARE_ADOPTED, this, s -> s.adopted.get())
        .tags("learner", l)
        .description("keys of a learner adopted from the store the replicas share")
        .register(registry);
  }

  /** Sends what is left (waiting at most a second), then stops. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      exchange().toCompletableFuture().get(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.debug("{}: last exchange: {}", learner.name(), e.toString());
    }
  }
}
