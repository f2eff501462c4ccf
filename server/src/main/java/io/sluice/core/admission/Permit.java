package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.Tenant;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * Work admitted into a pool. Held until the response ends or the stream is cancelled; {@link
 * #release} takes effect exactly once whatever path calls it (response end, cancel, error,
 * shutdown) — later calls return false and change nothing.
 */
public final class Permit {
  private final PoolState pool;
  private final ClassSlot slot;
  private final ClassPolicy requestClass;
  private final Tenant tenant;
  private long workUnits; // grows in flight (grow), under the pool's lock
  private long demandWork;
  private long grownWork; // work added in flight beyond the admitted estimate
  private final long admittedAtNanos;
  private final long inputTokens;
  private final long outputTokens;
  private volatile boolean released; // set once, through RELEASED (no AtomicBoolean per permit)
  private volatile boolean endUnseen; // held for a predicted tail (markEndUnseen)
  // the upstream refused it (429/503/529): no longer counted as running there; under the pool's
  // lock
  boolean upstreamRefused;
  // its tenant's counter of requests in flight ({@link TenantCounts}), set when taken; under the
  // pool's lock
  int @Nullable [] tenantCount; // null: a permit made outside a ledger (tests)

  private static final VarHandle RELEASED;

  static {
    try {
      RELEASED = MethodHandles.lookup().findVarHandle(Permit.class, "released", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /**
   * @param workUnits the work counted against the pool (at most what this replica can hold)
   * @param demandWork the work the request asked for (what it reports as demand for a share)
   */
  Permit(
      PoolState pool,
      ClassSlot slot,
      Tenant tenant,
      long workUnits,
      long demandWork,
      long admittedAtNanos,
      long inputTokens,
      long outputTokens) {
    this.pool = pool;
    this.demandWork = demandWork;
    this.slot = slot;
    this.requestClass = slot.policy();
    this.tenant = tenant;
    this.workUnits = workUnits;
    this.admittedAtNanos = admittedAtNanos;
    this.inputTokens = inputTokens;
    this.outputTokens = outputTokens;
  }

  /**
   * Returns the work to the pool. Returns true only for the call that actually released.
   *
   * @param nowNanos ticker time of the release
   */
  public boolean release(Outcome outcome, long nowNanos) {
    if (!RELEASED.compareAndSet(this, false, true)) {
      return false;
    }
    pool.release(this, outcome, nowNanos);
    return true;
  }

  /**
   * Counts {@code moreWork} more work units for this running request (its answer ran past its
   * output reserve), at most up to what its class can hold; returns the units added (0 once
   * released). The pool's free capacity shrinks by as much until the release returns it all.
   */
  public long grow(long moreWork) {
    return moreWork <= 0 || released ? 0 : pool.grow(this, moreWork);
  }

  /** Under the pool's lock: the ledger grew this permit's work by {@code work} and demand. */
  void grown(long work, long demand) {
    workUnits += work;
    demandWork += demand;
    grownWork += work;
  }

  /** Work units added in flight beyond the admitted estimate ({@link #grow}). */
  long grownWork() {
    return grownWork;
  }

  /**
   * The front end will not see the response's end: the permit is held for a predicted tail ({@link
   * PoolState#tailNanos}) and its release teaches the pool no service time. Counted in {@link
   * PoolState#tailsHeld} until released. Returns false (and changes nothing) if it was released or
   * marked already.
   */
  public boolean markEndUnseen() {
    if (released || endUnseen) {
      return false;
    }
    endUnseen = true;
    pool.tailStarted();
    return true;
  }

  /**
   * The response's end was seen after all (before the release): an ordinary permit again, no longer
   * counted in {@link PoolState#tailsHeld}.
   */
  public void markEndSeen() {
    if (endUnseen && !released) {
      endUnseen = false;
      pool.tailEnded();
    }
  }

  /** Whether the permit is (or was) held for a predicted tail ({@link #markEndUnseen}). */
  public boolean endUnseen() {
    return endUnseen;
  }

  public boolean isReleased() {
    return released;
  }

  public String poolName() {
    return pool.policy().name();
  }

  public ClassPolicy requestClass() {
    return requestClass;
  }

  ClassSlot slot() {
    return slot;
  }

  public Tenant tenant() {
    return tenant;
  }

  /** The work the request asked for, as counted in the demand for a replica share. */
  long demandWork() {
    return demandWork;
  }

  public long workUnits() {
    return workUnits;
  }

  /** The pool this permit counts in. */
  public PoolState pool() {
    return pool;
  }

  public long admittedAtNanos() {
    return admittedAtNanos;
  }

  /** Estimated input tokens of the request, or -1 if unknown. */
  public long inputTokens() {
    return inputTokens;
  }

  /** Reserved output tokens of the request, or -1 if unknown. */
  public long outputTokens() {
    return outputTokens;
  }
}
