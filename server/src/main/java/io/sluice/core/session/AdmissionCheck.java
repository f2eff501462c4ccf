package io.sluice.core.session;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * One thing a request must hold, or be let through by, before its pool decides: the tenant's
 * request rate, the retry attempt's claim, the token reservation, the tenant's slot across
 * replicas, the workflow's place. Built once per runtime snapshot ({@link CheckChain}) and shared
 * by every request of it: what one request holds lives in the {@link Held} its answer carries, and
 * the chain gives that back exactly once, in reverse order of acquisition, on every end path.
 *
 * <p>Two calls, so that a store's answer is handled in the request's serial context: {@link #ask}
 * (the store's round trip, or an answer at once as a completed stage: the chain then goes on
 * without a callback), then {@link #answered}, which emits the check's events and answers a {@link
 * Verdict}. Models: Netflix concurrency-limits' {@code Limiter.acquire} answering a listener to
 * release, armeria's {@code ThrottlingStrategy.accept}, grpc's {@code ServerInterceptor}.
 *
 * <p>To add one: its class (this interface, a {@link Held} of its own when it holds anything), and
 * a {@link Contributed} at its place in the order that the feature module registers (a built-in
 * one: a line in {@link CheckChain#of}); a table row in {@code CheckChainTest} (CONTRIBUTING.md,
 * "How a feature joins a request").
 *
 * @param <A> the store's answer
 */
public interface AdmissionCheck<A> {
  /** When a check runs: at the request headers, or once the request's estimate is known. */
  enum Stage {
    /** Before the body: a refusal here comes before the body is read. */
    HEADERS,
    /** With the estimate (tokens, work units), right before the pool decides. */
    ESTIMATE
  }

  Stage stage();

  /**
   * Whether the check applies to this request (its tenant's tier, its workflow): when false it is
   * skipped, nothing asked, nothing allocated.
   */
  boolean applies(Request r);

  /**
   * True when {@link #applies} is true for every request, whatever it is (the default: false): the
   * chain then asks the check without calling {@link #applies}, decided once when it is built.
   */
  default boolean appliesToAll() {
    return false;
  }

  /** Asks (a store round trip, or at once); called in the request's serial context. */
  CompletionStage<A> ask(Request r);

  /** The answer, in the request's serial context: emits the check's events, answers a verdict. */
  Verdict answered(A answer, Request r);

  /**
   * The check's own answer {@code a} to {@code r} ({@link #answered}) came after the front end went
   * away (its store answered late): nobody receives it. Undo what it promised (say, cancel the job
   * it accepted), and answer what to note of the undone answer, or null (the default: nothing to
   * undo). Called at most once per answer. With a note, the request is told to the listeners as
   * answered ({@link SessionEvent.Answered}, {@code a}'s reason and status) with the note among its
   * facts, nobody is answered, nothing is given back again.
   */
  default @Nullable Object unanswered(Answered a, Request r) {
    return null;
  }

  /**
   * Whether {@link #ask} is a quota store's round trip: the test seam ({@link SessionSteps#quota},
   * {@link SessionSteps.Step#QUOTA}) sees it. False for an answer kept in this process.
   */
  default boolean store() {
    return true;
  }

  /**
   * The request was refused (by any check, or by the pool), enforced: what the check remembers of
   * it. Called for every check of the chain, applied or not.
   */
  default void refused(Request r, Reason why, long retryAfterSeconds) {}

  /**
   * What a check built for a snapshot may use of it.
   *
   * @param controller the snapshot's pools
   * @param listener where the check's events go
   * @param clock wall-clock time (buckets, records)
   */
  record Context(
      io.sluice.core.admission.AdmissionController controller,
      SessionListener listener,
      java.time.Clock clock) {}

  /**
   * A check a feature contributes to the snapshot's chain ({@link Sessions.Builder#check}), built
   * once per snapshot at its place: {@code order} among the built-in ones ({@link
   * CheckChain#TENANT_RATE}, {@link CheckChain#TOKEN_RESERVATION}, {@link CheckChain#TENANT_SLOT},
   * {@link CheckChain#WORKFLOW_PLACE}; equal orders keep their registration order), every {@link
   * Stage#HEADERS} check before an {@link Stage#ESTIMATE} one.
   *
   * @param order its place in the chain
   * @param factory builds the check, or answers null when the snapshot turns it off (it is then
   *     left out of the chain: nothing runs, nothing allocated)
   */
  record Contributed(int order, Factory factory) {}

  /** Builds a contributed check for a snapshot ({@link Contributed}). */
  @FunctionalInterface
  interface Factory {
    @Nullable AdmissionCheck<?> create(Context snapshot);
  }

  /** What a check sees of the request. */
  interface Request {
    Subject subject();

    /** Null at {@link Stage#HEADERS}. */
    @Nullable TokenEstimate estimate();

    /** 0 at {@link Stage#HEADERS}. */
    long workUnits();

    /**
     * The buffered body, at {@link Stage#ESTIMATE} of a request decided with its body; null at the
     * headers or when it was decided without one.
     */
    default @Nullable Body body() {
      return null;
    }

    /**
     * The check's {@link #ask} keeps the request waiting on purpose (a budget's pace, running
     * requests to settle), longer than a store's round trip: the front end holds the deciding
     * message at once (Envoy's {@code override_message_timeout}, the longest hold it accepts), so
     * Envoy's {@code message_timeout} does not end the request meanwhile. From any thread; the
     * first call of a request counts.
     */
    default void waiting() {}
  }

  /**
   * A check's answer: go on ({@link Continue}), a {@link Refusal}, a {@link Held}, or the check's
   * own {@link Answered answer} to the request.
   */
  sealed interface Verdict permits Continue, Refusal, Held, Answered {}

  /** Go on, nothing held. */
  enum Continue implements Verdict {
    INSTANCE
  }

  /** Refused, nothing held: the request is answered this status, reason and Retry-After. */
  record Refusal(Reason reason, int status, long retryAfterSeconds, String message)
      implements Verdict {}

  /**
   * The check answers the request itself, nothing held and nothing sent upstream (a job accepted
   * for later, an operation's status): this status, headers and body (the front end adds its own
   * {@code x-sluice-reason}). {@code reason} names the answer in the metrics and the decision
   * record. The session gives back what the earlier checks hold, as for a refusal.
   *
   * @param headers response headers besides {@code content-type: application/json} (lower case)
   * @param body the response body (JSON), never modified after it is handed over
   * @param note what the check notes of the request for its listeners and record part (as {@link
   *     Held#note()}; events carry it in {@link RequestFacts#note}), or null
   */
  @SuppressWarnings("ArrayRecordComponent") // handed to the wire as it is
  record Answered(
      Reason reason,
      int status,
      java.util.Map<String, String> headers,
      byte[] body,
      @Nullable Object note)
      implements Verdict {}

  /**
   * The request's buffered body as a check with the estimate sees it: read in place, never modified
   * or kept past the check's {@code ask} (copy what must outlive it).
   */
  @SuppressWarnings("ArrayRecordComponent") // by reference: never compared or hashed
  record Body(byte[] bytes, int offset, int length) {}

  /** How the chain gives a hold back. */
  enum Release {
    /** The request was refused (by a later check, or the pool). */
    REFUSED,
    /**
     * The front end ended it before it ran (cancel, error, shutdown; also while a store answers).
     */
    CANCELLED,
    /** Shadow mode let it through without a place in the pool: what a pass does not keep. */
    PASSED,
    /** It ran and ended (its permit released, or its shadow pass ended). */
    ENDED
  }

  /**
   * What a check holds for one request (a claim, a reservation, a slot): given back exactly once by
   * the chain ({@link #release}). It may carry a refusal too (held, then refused: given back).
   */
  abstract non-sealed class Held implements Verdict {
    private boolean released;
    private @Nullable CheckNotes alone; // its note as the request's only one, made on first use

    /** The refusal that comes with it, or null to go on. */
    public @Nullable Refusal refusal() {
      return null;
    }

    /**
     * What the check notes of the request for its listeners, an immutable value of its own type
     * (say, how a feature classified the request), or null: events carry it in {@link
     * RequestFacts#note}. The same value at every call.
     */
    public @Nullable Object note() {
      return null;
    }

    /** Its note as the request's only one: made once, then shared by every event's facts. */
    final CheckNotes alone(Object note) {
      CheckNotes n = alone;
      if (n == null) {
        n = CheckNotes.one(note);
        alone = n;
      }
      return n;
    }

    /**
     * Shadow mode let the request through without a permit ({@code wouldReject}: enforcement would
     * have refused it, else queued it): true if the hold stays until the pass ends, false to give
     * it back now.
     */
    protected boolean keptByPass(boolean wouldReject) {
      return false;
    }

    /**
     * Headers the client's response gets while the request runs with this hold (say, what is left
     * of a budget), or null (the default): read when its response headers are answered.
     */
    public java.util.@Nullable Map<String, String> disclose() {
      return null;
    }

    /**
     * The request runs a cheaper way than it was held for ({@code cheaper}: a planner's cheaper
     * version, e.g. the degrade ladder's concise rung): a hold sized by the estimate gives back
     * what the cheaper run no longer needs. Called by the session when its planner decides, while
     * held; nothing by default.
     */
    protected void runsAs(io.sluice.core.estimate.TokenEstimate cheaper) {}

    /** Gives the hold back; called once, by the chain. */
    protected abstract void release(Release how);

    /** Whether the chain gave it back already. */
    public final boolean released() {
      return released;
    }

    final void releaseOnce(Release how) {
      if (!released) {
        released = true;
        release(how);
      }
    }
  }
}
