package io.sluice.core.permit;

/**
 * What the permit desk reports for its meters ({@code observability.PermitMetrics}): each acquire's
 * answer, each lease's end. Called on any thread; must not throw or block.
 */
public interface PermitEvents {
  PermitEvents NONE = new PermitEvents() {};

  /** How a lease ended. */
  enum End {
    RELEASED,
    /** Its record was released at another replica; this replica gave its place back. */
    RELEASED_ELSEWHERE,
    EXPIRED,
    /**
     * Released after its lease ran out in the store, before the granting replica's sweep saw it:
     * counted once, at the replica that got the release (not as an expiry, not as a release).
     */
    RELEASED_AFTER_EXPIRY
  }

  /**
   * An acquire was answered.
   *
   * @param pool the configured pool, or "" when it names none
   * @param waitedNanos how long it waited in the pool's queue
   */
  default void acquired(String pool, PermitDesk.Answer.Kind kind, long waitedNanos) {}

  /** A lease ended ({@code pool}: a configured pool's name, or a permit id's, bounded by them). */
  default void ended(String pool, End how) {}

  /**
   * A release reported {@code actualWork} units of work done (a release, or a release after
   * expiry), counted at the replica that got the release, whichever granted the permit.
   */
  default void work(String pool, long actualWork) {}
}
