package io.sluice.bootstrap;

import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.ReserveSnapshot;
import io.sluice.core.estimate.ReserveStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The learned output reserve shared by the replicas through the store they share (docs/
 * estimation.md, "Shared across replicas and restarts"): at start the replica reads every key the
 * others learned for its pools before it reports ready (bounded by {@code
 * server.warmup.storeTimeout}), then every {@code shareInterval} sends what it learned since and
 * adopts the keys anyone wrote since; at shutdown it sends what is left, so a restart loses at most
 * nothing it saw. Only with a store the replicas share (Redis): in memory the learner itself
 * outlives reloads.
 */
final class ReserveSharing implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReserveSharing.class);

  /** Keys written this long before the last pull are read again: writes racing a pull. */
  static final long OVERLAP_MILLIS = 2_000;

  private final OutputReserves reserves;
  private final ReserveStore store;
  private final String namespace;
  private final Supplier<Collection<String>> pools;
  private final AtomicBoolean busy = new AtomicBoolean();
  private final AtomicLong exchanges = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private volatile long sinceMillis; // the store's clock: keys written since are read
  private volatile @Nullable ScheduledExecutorService timer;
  private volatile boolean closed;

  ReserveSharing(
      OutputReserves reserves,
      ReserveStore store,
      String namespace,
      Supplier<Collection<String>> pools) {
    this.reserves = reserves;
    this.store = store;
    this.namespace = namespace;
    this.pools = pools;
  }

  /** Sharing through {@code store}, or null when there is none (memory backend). */
  static @Nullable ReserveSharing create(
      OutputReserves reserves,
      @Nullable ReserveStore store,
      String namespace,
      Supplier<Collection<String>> pools) {
    return store == null ? null : new ReserveSharing(reserves, store, namespace, pools);
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
          "learned output reserve: {} keys read from the shared store in {} ms",
          keys,
          (System.nanoTime() - t0) / 1_000_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn(
          "learned output reserve: shared state not read at start ({}); starting from priors,"
              + " retried every shareInterval",
          e.toString());
    }
    schedule();
  }

  private void schedule() {
    ScheduledExecutorService t = timer;
    if (t == null || closed) {
      return;
    }
    long every = reserves.settings().shareIntervalMillis();
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
      LOG.warn("learned output reserve: {}", e.toString());
    } finally {
      schedule();
    }
  }

  /**
   * One exchange: this replica's additions out, the keys written since the last one in; answers how
   * many keys were adopted (0 when one is already running or learning is off).
   */
  CompletionStage<Integer> exchange() {
    OutputReserves.Settings s = reserves.settings();
    if (!s.enabled() || !busy.compareAndSet(false, true)) {
      return CompletableFuture.completedFuture(0);
    }
    List<ReserveSnapshot> additions = reserves.takeAdditions();
    long since = sinceMillis;
    CompletionStage<ReserveStore.Pull> answer;
    try {
      answer =
          store.exchange(
              namespace,
              pools.get(),
              additions,
              since <= 0 ? 0 : since - OVERLAP_MILLIS,
              s.shareWindowMillis(),
              s.maxKeys());
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
              LOG.warn("learned output reserve: exchange failed: {}", e.toString());
            }
            return 0;
          }
          for (ReserveSnapshot k : pull.changed()) {
            reserves.adopt(k);
          }
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
      LOG.debug("learned output reserve: last exchange: {}", e.toString());
    }
  }
}
