package io.sluice.core.retry;

import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Where the attempts' state lives: in this process (bounded), or in the store every replica shares
 * (docs/scheduling.md, "Retries"). Every call is one atomic step in the store; times are the
 * store's own (a replica's clock never crosses this port), durations in milliseconds.
 *
 * <p>Keys (built by {@link RetryKeys}) belong to one pool, so one call touches one slot of a Redis
 * Cluster.
 */
public interface AttemptStore {
  /**
   * One request's attempt, in one atomic step, in this order:
   *
   * <ol>
   *   <li>the operation's seen count goes up by one (when it has an operation id) and its window
   *       ({@link Observe#seenWindowMillis}) starts again; the request is a retry when the count is
   *       above 1 or {@link Observe#retryByHeaders};
   *   <li>with {@link Observe#claim}: the operation is claimed in flight for {@link Observe#owner}
   *       ({@code SET NX} with a TTL of {@link Observe#inFlightTtlMillis}); if another attempt
   *       holds it, the answer says so and how long ago that attempt started; a completed
   *       operation's replay marker is taken over unless {@link Observe#refuseReplay};
   *   <li>the refusal remembered under {@link Observe#refusalKey}, if any: its remaining
   *       Retry-After (positive: the request came back early), the Retry-After given and the
   *       reason;
   *   <li>unless the request is to be refused already (a duplicate with {@link
   *       Observe#refuseInFlight}, a replay with {@link Observe#refuseReplay}, an early retry with
   *       {@link Observe#refuseEarly}): the budget bucket ({@link Observe#budgetKey}, unless null):
   *       full at first; first the {@link Observe#deferredOriginals} each add {@code tokenRatio} up
   *       to {@code maxTokens}; then this original adds {@code tokenRatio} likewise, or a retry is
   *       allowed while the bucket holds more than {@code maxTokens / 2} and then costs 1; the
   *       bucket is kept {@link Observe#idleMillis} after its last use.
   * </ol>
   */
  CompletionStage<Observation> observe(Observe o);

  /**
   * The attempt that claimed {@code operationKey} ended: the claim goes if {@code owner} still
   * holds it (compare and delete), replaced by a replay marker for {@code replayMillis} when that
   * is positive. Another owner's claim is left alone.
   */
  CompletionStage<Void> complete(String operationKey, String owner, long replayMillis);

  /**
   * Whether every {@link #observe} is a call to a store shared across replicas (a network round
   * trip): retry control then does not call it for an original that has no operation id and is not
   * a retry by its headers (such a request only refills its budget bucket) and hands the store
   * those refills with a later call ({@link Observe#deferredOriginals}).
   */
  default boolean shared() {
    return false;
  }

  /**
   * Whether a plain original (no operation id, not a retry by its headers) on the budget bucket
   * {@code budgetKey} (null: no budget) is answered now with nothing to change in this store: no
   * bucket, or a full one. {@link #observe} would then answer it no duplicate, no refusal read, the
   * budget allowed and {@code maxTokens} in the bucket (NaN without one), and write nothing, so
   * retry control asks nothing more of the store for it and builds neither the question nor the
   * answer. False (the default): retry control calls {@link #observe}. Never called for a {@link
   * #shared} store.
   */
  default boolean quietOriginal(@Nullable String budgetKey) {
    return false;
  }

  /**
   * Remembers a refusal under {@code refusalKey}: Retry-After {@code retryAfterSeconds} from now,
   * with {@code reason}; kept {@code keepMillis} (at least the Retry-After).
   */
  CompletionStage<Void> remember(
      String refusalKey, long retryAfterSeconds, String reason, long keepMillis);

  /**
   * One request's question to the store.
   *
   * @param seenKey the operation's seen counter, or null when the request has no operation id
   * @param operationKey the operation's in-flight claim, or null when none is taken
   * @param deferredOriginals originals of the same bucket this replica did not send ({@link
   *     #shared}): their refills, applied to the bucket before this request's own effect
   */
  record Observe(
      @Nullable String seenKey,
      @Nullable String operationKey,
      String refusalKey,
      @Nullable String budgetKey,
      String owner,
      boolean retryByHeaders,
      boolean claim,
      boolean refuseInFlight,
      boolean refuseReplay,
      boolean refuseEarly,
      long seenWindowMillis,
      long inFlightTtlMillis,
      double maxTokens,
      double tokenRatio,
      long idleMillis,
      long deferredOriginals) {

    /** This request, handing over {@code n} originals the replica did not send. */
    public Observe withDeferredOriginals(long n) {
      return new Observe(
          seenKey,
          operationKey,
          refusalKey,
          budgetKey,
          owner,
          retryByHeaders,
          claim,
          refuseInFlight,
          refuseReplay,
          refuseEarly,
          seenWindowMillis,
          inFlightTtlMillis,
          maxTokens,
          tokenRatio,
          idleMillis,
          n);
    }
  }

  /**
   * The store's answer.
   *
   * @param seen the operation's attempts within its window, this one included (0: no operation id)
   * @param duplicate {@link #NO_DUPLICATE}, {@link #IN_FLIGHT} or {@link #COMPLETED}
   * @param duplicateAgeMillis how long ago the other attempt started (or completed)
   * @param claimed whether this request holds the operation's claim now (give it back: {@link
   *     #complete})
   * @param refusalRemainingMillis of the remembered refusal's Retry-After: positive = early, else
   *     honoured; {@link Long#MIN_VALUE} when none is remembered
   * @param refusalRetryAfterSeconds the Retry-After that refusal gave
   * @param refusalReason its reason code ("" when none)
   * @param budgetAllowed false when the budget refused the retry
   * @param budgetTokens tokens in the bucket after this request (NaN: no bucket touched)
   */
  record Observation(
      long seen,
      int duplicate,
      long duplicateAgeMillis,
      boolean claimed,
      long refusalRemainingMillis,
      long refusalRetryAfterSeconds,
      String refusalReason,
      boolean budgetAllowed,
      double budgetTokens) {
    public static final int NO_DUPLICATE = 0;
    public static final int IN_FLIGHT = 1;
    public static final int COMPLETED = 2;

    public boolean refusalRemembered() {
      return refusalRemainingMillis != Long.MIN_VALUE;
    }
  }
}
