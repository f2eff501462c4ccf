package io.sluice.core.permit;

import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.session.DetachedChecks;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The permits this replica granted and still holds in its pools ({@link PermitDesk}): by permit id,
 * each with its checks' holds and the last time the shared store said its lease was live; an
 * operation id's permit; how many acquires wait. Each lease leaves exactly once ({@link #take}),
 * and whoever takes it gives its permit and holds back ({@link Lease#giveBack}). Thread-safe: one
 * monitor, never held while a permit or hold is given back.
 */
final class PermitBook {
  /** A held permit: its pool's place, what the checks hold, its operation id. */
  static final class Lease {
    final String pool;
    final Permit permit;
    final DetachedChecks.@Nullable Holds holds;
    final String opId;
    long confirmedAtNanos; // the store last said it is live (or it was granted)

    Lease(
        String pool,
        Permit permit,
        DetachedChecks.@Nullable Holds holds,
        String opId,
        long confirmedAtNanos) {
      this.pool = pool;
      this.permit = permit;
      this.holds = holds;
      this.opId = opId;
      this.confirmedAtNanos = confirmedAtNanos;
    }

    /** The permit back to its pool, then the checks' holds ({@code ran}: it ran and ended). */
    void giveBack(Outcome outcome, long work, long nowNanos) {
      if (work > permit.workUnits()) {
        permit.grow(work - permit.workUnits());
      }
      permit.release(outcome, nowNanos);
      if (holds != null) {
        holds.release(outcome == Outcome.COMPLETED);
      }
    }
  }

  // guarded by this
  private final LinkedHashMap<String, Lease> leases = new LinkedHashMap<>();
  private final Map<String, String> byOperation = new HashMap<>();
  private int waiting;
  private boolean closed;

  /** Takes a place for an acquire: false when closed or {@code max} are held or waiting. */
  synchronized boolean enter(int max) {
    if (closed || leases.size() + waiting >= max) {
      return false;
    }
    waiting++;
    return true;
  }

  /** An acquire that entered ended without a lease. */
  synchronized void left() {
    waiting--;
  }

  /** An acquire that entered got {@code lease}: false (not kept) when closed meanwhile. */
  synchronized boolean keep(String id, Lease lease) {
    waiting--;
    if (closed) {
      return false;
    }
    leases.put(id, lease);
    if (!lease.opId.isEmpty()) {
      byOperation.put(lease.opId, id);
    }
    return true;
  }

  synchronized boolean closed() {
    return closed;
  }

  /** The permit id held for {@code opId}, or null. */
  synchronized @Nullable String byOperation(String opId) {
    String id = opId.isEmpty() ? null : byOperation.get(opId);
    return id != null && leases.containsKey(id) ? id : null;
  }

  /** Removes {@code id}'s lease: the caller gives it back; null when not held here. */
  synchronized @Nullable Lease take(String id) {
    Lease l = leases.remove(id);
    if (l != null && !l.opId.isEmpty()) {
      byOperation.remove(l.opId, id);
    }
    return l;
  }

  /** The store said {@code id} is live at {@code nowNanos}. */
  synchronized void confirmed(String id, long nowNanos) {
    Lease l = leases.get(id);
    if (l != null) {
      l.confirmedAtNanos = nowNanos;
    }
  }

  /** The ids held, by pool. */
  synchronized Map<String, List<String>> byPool() {
    Map<String, List<String>> out = new HashMap<>();
    leases.forEach((id, l) -> out.computeIfAbsent(l.pool, p -> new ArrayList<>()).add(id));
    return out;
  }

  /**
   * Takes the leases of {@code pool} not confirmed within {@code staleNanos} (store unreachable).
   */
  synchronized List<Lease> takeStale(String pool, long nowNanos, long staleNanos) {
    List<Lease> out = new ArrayList<>();
    for (Iterator<Map.Entry<String, Lease>> it = leases.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, Lease> e = it.next();
      Lease l = e.getValue();
      if (l.pool.equals(pool) && nowNanos - l.confirmedAtNanos > staleNanos) {
        it.remove();
        byOperation.remove(l.opId, e.getKey());
        out.add(l);
      }
    }
    return out;
  }

  /** Closes the book: every lease taken (the caller gives them back), later acquires refused. */
  synchronized Map<String, Lease> close() {
    closed = true;
    Map<String, Lease> all = new LinkedHashMap<>(leases);
    leases.clear();
    byOperation.clear();
    return all;
  }

  synchronized int size() {
    return leases.size();
  }
}
