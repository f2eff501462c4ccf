package io.sluice.store.memory;

import io.sluice.core.time.Ticker;
import io.sluice.core.turn.TurnLedger;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * {@link TurnLedger} in this process: one record per run, turn and pool, expiring its TTL after its
 * last write on the injected {@link Ticker}, at most {@code maxTurns} records (the least recently
 * written leaves first: a client that invents turns can only push out old turns, whose retries then
 * count from zero again). Thread-safe (one lock).
 */
public final class InMemoryTurnLedger implements TurnLedger {
  private static final class Turn {
    long sheds;
    long retries;
    long expiresAtNanos;
  }

  private final Ticker ticker;
  private int maxTurns;
  // guarded by this; in order of last write
  private final LinkedHashMap<String, Turn> turns = new LinkedHashMap<>(16, 0.75f, true);

  public InMemoryTurnLedger(Ticker ticker, int maxTurns) {
    this.ticker = ticker;
    this.maxTurns = Math.max(1, maxTurns);
  }

  /** A new bound (a reload); records past it leave now, the least recently written first. */
  public synchronized void resize(int maxTurns) {
    this.maxTurns = Math.max(1, maxTurns);
    trim();
  }

  @Override
  public synchronized CompletionStage<Verdict> call(
      String namespace, String pool, String run, String turn, int maxRetries, long ttlMillis) {
    long now = ticker.nanos();
    String key = TurnLedger.key(namespace, pool, run, turn);
    Turn t = live(key, now);
    if (t == null || t.sheds == 0) {
      return CompletableFuture.completedFuture(Verdict.FIRST);
    }
    if (t.retries + 1 > Math.max(0, maxRetries)) {
      return CompletableFuture.completedFuture(new Verdict(false, t.sheds, t.retries));
    }
    t.retries++;
    t.expiresAtNanos = now + Math.max(1, ttlMillis) * 1_000_000L;
    return CompletableFuture.completedFuture(new Verdict(true, t.sheds, t.retries));
  }

  @Override
  public synchronized CompletionStage<Void> shed(
      String namespace, String pool, String run, String turn, long ttlMillis) {
    long now = ticker.nanos();
    String key = TurnLedger.key(namespace, pool, run, turn);
    Turn t = live(key, now);
    if (t == null) {
      t = new Turn();
      turns.put(key, t);
    }
    t.sheds++;
    t.expiresAtNanos = now + Math.max(1, ttlMillis) * 1_000_000L;
    trim();
    return CompletableFuture.completedFuture(null);
  }

  /** Records kept now (expired ones until they are touched or pushed out). */
  public synchronized int size() {
    return turns.size();
  }

  private @Nullable Turn live(String key, long now) {
    Turn t = turns.get(key);
    if (t != null && t.expiresAtNanos - now <= 0) {
      turns.remove(key);
      return null;
    }
    return t;
  }

  private void trim() {
    Iterator<Map.Entry<String, Turn>> it = turns.entrySet().iterator();
    while (turns.size() > maxTurns && it.hasNext()) {
      it.next();
      it.remove();
    }
  }
}
