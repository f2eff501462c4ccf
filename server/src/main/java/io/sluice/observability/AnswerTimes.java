package io.sluice.observability;

import io.sluice.core.admission.Outcome;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Subject;

/**
 * What one released request says about the service levels, worked out once from its facts so that
 * the Prometheus meters ({@link SloRecorder}) and the OTLP export ({@link OtelRecorder}) report the
 * same numbers. Times are the client's view: from the request's arrival at Sluice (queue wait and
 * decision included), on the ticker. Plain static functions; nothing allocated.
 */
public final class AnswerTimes {
  /** {@code result} of an answer that ended 2xx within its deadline: goodput. */
  public static final String GOODPUT = "goodput";

  /** An answer that ended 2xx after its deadline. */
  public static final String LATE = "late";

  /** An answer the client or Envoy cancelled before its end. */
  public static final String CANCELLED = "cancelled";

  /** An answer that ended in an upstream error status, a stream error or shutdown. */
  public static final String FAILED = "failed";

  /** Every {@code result}, in the order the meters are made from start. */
  static final String[] RESULTS = {GOODPUT, LATE, CANCELLED, FAILED};

  /** {@code cause} of tokens produced for a cancelled answer. */
  public static final String WASTE_CANCELLED = "cancelled";

  /** {@code cause} of tokens produced for an answer that ended after its deadline. */
  public static final String WASTE_DEADLINE = "deadline_missed";

  private AnswerTimes() {}

  /** Whether the release is of an answer that ran upstream with a permit (SLOs count these). */
  public static boolean counted(SessionEvent.Released e) {
    return e.facts().run().permit() && e.facts().run().admittedAtNanos() != 0;
  }

  /** Ticker time the answer ended (the permit's release). */
  public static long endNanos(SessionEvent.Released e) {
    return e.facts().run().admittedAtNanos() + e.heldNanos();
  }

  /** Arrival to the end of the answer, ns. */
  public static long durationNanos(SessionEvent.Released e) {
    return Math.max(0, endNanos(e) - e.facts().subject().arrivalNanos());
  }

  /** Arrival to the answer's first body chunk, ns; -1 when none came. */
  public static long timeToFirstTokenNanos(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    long first = f.end().firstChunkNanos();
    if (first < 0) {
      return -1;
    }
    return Math.max(0, f.run().admittedAtNanos() - f.subject().arrivalNanos()) + first;
  }

  /** The output tokens the answer produced: reported, else metered from its text. */
  public static long outputTokens(SessionEvent.Released e) {
    return Math.max(e.usage().outputTokens(), e.facts().end().charge().meteredOutputTokens());
  }

  /**
   * Time per output token after the first, ns: (end - first chunk) / (output - 1), for a complete
   * answer of at least two output tokens whose first chunk was seen; else -1.
   */
  public static long timePerOutputTokenNanos(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    long out = outputTokens(e);
    long first = f.end().firstChunkNanos();
    if (e.outcome() != Outcome.COMPLETED || !f.end().complete() || first < 0 || out < 2) {
      return -1;
    }
    return Math.max(0, e.heldNanos() - first) / (out - 1);
  }

  /** {@link #GOODPUT}, {@link #LATE}, {@link #CANCELLED} or {@link #FAILED}. */
  public static String result(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    if (e.outcome() == Outcome.CANCELLED) {
      return CANCELLED;
    }
    int status = f.end().upstreamStatus();
    if (e.outcome() != Outcome.COMPLETED || status < 200 || status > 299) {
      return FAILED;
    }
    Subject s = f.subject();
    return endNanos(e) <= s.deadlineNanos() ? GOODPUT : LATE;
  }

  /**
   * The cause its produced tokens were wasted by ({@link #WASTE_CANCELLED}, {@link
   * #WASTE_DEADLINE}), or null when they were not.
   */
  public static @org.jspecify.annotations.Nullable String waste(String result) {
    if (result.equals(CANCELLED)) {
      return WASTE_CANCELLED;
    }
    return result.equals(LATE) ? WASTE_DEADLINE : null;
  }
}
