package io.sluice.core.admission;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the caller of {@link AdmissionController#decide} asks of the pool for one request: start now
 * or refuse, start now or wait in its class queue, or only say what enforcement would do.
 *
 * @param mode what may happen to the request
 * @param maxHoldNanos the longest the adapter can hold the request (Envoy's max_message_timeout); 0
 *     = never queue
 * @param waiter called exactly once when a {@link Decision.Queued} request is answered ({@link
 *     Mode#HOLD} only; null: never queued)
 * @param degradeWaitNanos a degrade ladder's wait trigger ({@link Mode#HOLD} only; 0: none): a
 *     request that cannot start now and would wait longer than this (predicted, or as long as its
 *     class's oldest waiting request has already waited), or be refused for want of capacity, is
 *     answered {@link Decision.Degradable}, nothing queued
 * @param nowNanos ticker time of the decision
 */
public record Ask(
    Mode mode, long maxHoldNanos, @Nullable Waiter waiter, long degradeWaitNanos, long nowNanos) {

  /** What may happen to the request. */
  public enum Mode {
    /** Admit now or refuse (no queueing). */
    NOW,
    /**
     * A degrade rung's start: admit now or refuse, never queued, and a refusal is not the pool's
     * unmet demand (the request it stands for is decided again, and counted then).
     */
    RUNG,
    /** Admit now, queue (when the hold allows it), or refuse (PRODUCT.md rules 2–4). */
    HOLD,
    /**
     * Shadow mode (observe only): an admit takes its permit as usual; a refusal is returned as
     * such; where {@link #HOLD} would queue, {@link Decision.WouldQueue} is returned and nothing is
     * queued (the queue checks run against the queue as it is, without the offer).
     */
    SHADOW
  }

  public Ask {
    Objects.requireNonNull(mode, "mode");
    if (waiter != null && mode != Mode.HOLD) {
      throw new IllegalArgumentException("a waiter is given only with the mode HOLD");
    }
    if (degradeWaitNanos != 0 && mode != Mode.HOLD) {
      throw new IllegalArgumentException("a degrade wait trigger needs the mode HOLD");
    }
  }

  /** Admit now or refuse. */
  public static Ask now(long nowNanos) {
    return new Ask(Mode.NOW, 0, null, 0, nowNanos);
  }

  /** A degrade rung's start ({@link Mode#RUNG}). */
  public static Ask rung(long nowNanos) {
    return new Ask(Mode.RUNG, 0, null, 0, nowNanos);
  }

  /**
   * Admit now, queue (when {@code maxHoldNanos > 0} and a waiter is given; it then answers the
   * request exactly once), or refuse.
   */
  public static Ask hold(long maxHoldNanos, @Nullable Waiter waiter, long nowNanos) {
    return new Ask(Mode.HOLD, maxHoldNanos, waiter, 0, nowNanos);
  }

  /** The decision {@link Mode#HOLD} would make, nothing queued ({@link Mode#SHADOW}). */
  public static Ask shadow(long maxHoldNanos, long nowNanos) {
    return new Ask(Mode.SHADOW, maxHoldNanos, null, 0, nowNanos);
  }

  /**
   * This ask with a degrade ladder's wait trigger ({@code waitNanos <= 0}: none): see {@link
   * #degradeWaitNanos}.
   */
  public Ask degradeAbove(long waitNanos) {
    return waitNanos <= 0 ? this : new Ask(mode, maxHoldNanos, waiter, waitNanos, nowNanos);
  }

  /** Whether a refusal counts as unmet demand for a replica share. */
  boolean countsDemand() {
    return mode != Mode.RUNG;
  }
}
