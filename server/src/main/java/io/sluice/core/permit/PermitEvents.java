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
    EXPIRED
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
}
