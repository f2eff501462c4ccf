package io.sluice.core.admission;

/** The answer of the admission core. Expected outcomes are values, not exceptions. */
public sealed interface Decision
    permits Decision.Admit,
        Decision.Reject,
        Decision.Queued,
        Decision.WouldQueue,
        Decision.Degradable {

  Reason reason();

  /** Run now; the permit must be released exactly once when the response ends. */
  record Admit(Permit permit) implements Decision {
    @Override
    public Reason reason() {
      return Reason.ADMITTED;
    }
  }

  /**
   * Refuse now.
   *
   * @param status HTTP status (429 for the caller's own share, 503 for saturation, 4xx for input)
   * @param retryAfterSeconds whole seconds, >= 1 for 429/503, 0 when retrying cannot help
   * @param message human-readable, never contains prompt text
   * @param waitNanos the predicted wait or drain time its Retry-After was computed from, before
   *     clamping and jitter ({@link #UNPREDICTED}: none, e.g. a refusal retrying cannot help)
   */
  record Reject(Reason reason, int status, long retryAfterSeconds, String message, long waitNanos)
      implements Decision {
    /** {@code waitNanos} of a refusal whose Retry-After was not computed from a predicted wait. */
    public static final long UNPREDICTED = -1;
  }

  /**
   * Wait: the request is in its class queue and its {@link Waiter} will be called exactly once, no
   * later than {@code answerByNanos}. The adapter holds the request (Envoy: one {@code
   * override_message_timeout} of {@code holdNanos}) and arms a timer for {@code expiresAtNanos}.
   *
   * @param ticket id for {@link AdmissionController#cancel}
   * @param holdNanos how long the adapter must hold (expiry + the pool's hold margin)
   * @param expiresAtNanos the latest start time; the expiry timer fires here
   * @param position requests ahead at arrival (0 = next)
   * @param predictedWaitNanos predicted wait at arrival
   */
  record Queued(
      String pool,
      long ticket,
      long holdNanos,
      long expiresAtNanos,
      int position,
      long predictedWaitNanos)
      implements Decision {
    @Override
    public Reason reason() {
      return Reason.ADMITTED;
    }
  }

  /**
   * Shadow mode only ({@link Ask.Mode#SHADOW}): enforcement would have queued the request; nothing
   * was queued and no permit taken.
   *
   * @param reason the capacity reason that made it wait (what it would be refused with if it could
   *     not be held)
   * @param position requests ahead of it in its class queue now
   * @param predictedWaitNanos the wait enforcement would have predicted for it
   */
  record WouldQueue(Reason reason, int position, long predictedWaitNanos) implements Decision {}

  /**
   * The request cannot start now and its class has a degrade ladder whose wait trigger fired
   * ({@link Ask#degradeAbove}): its predicted wait (the prediction, or the age of the class's
   * oldest waiting request when that is longer) is above the ladder's threshold, or it would be
   * refused. Nothing was queued and no permit taken; the caller tries the ladder, then decides
   * again without it.
   *
   * @param reason the capacity reason it cannot start now
   * @param predictedWaitNanos its expected wait ({@code -1}: it would be refused, not queued)
   */
  record Degradable(Reason reason, long predictedWaitNanos) implements Decision {}
}
