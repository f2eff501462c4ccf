package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.estimate.UsageExtractor;
import io.sluice.core.policy.PoolPolicy;
import org.jspecify.annotations.Nullable;

/**
 * A session's response, metered: the upstream's status (an adaptive pool hears it), the usage the
 * body reports, the first chunk's time (an adaptive pool's time to first token), and the output an
 * event stream produced past its reserve, which grows the permit in flight. One per session, called
 * in its serial context; the permit and estimate are the session's, passed in.
 */
final class ResponseMeter {
  // the end of a request whose answer never began (no response headers): shared, immutable
  private static final ChargeRule.Answer NO_ANSWER =
      new ChargeRule.Answer(false, 0, false, false, false, 0, 0, Usage.NONE);
  // the end's facts before anything of the answer came or was charged: shared, immutable
  private static final RequestFacts.End NOT_BEGUN =
      new RequestFacts.End(0, "seen", false, Charge.NONE, false, -1);

  // the last end's facts of a request that ended before any answer: its charge's (shared,
  // ChargeRule)
  private static volatile RequestFacts.@Nullable End lastUnanswered;

  private final Sessions env;
  private final Subject subject;
  private @Nullable UsageExtractor usage;
  private int status;
  private boolean firstChunkSeen; // a response body chunk before the last one came
  private long firstChunkNanos; // when
  private boolean bodySeen; // any response body chunk came
  private long grownCharge; // output tokens the pool counts once the answer overran its reserve
  private boolean overran; // the answer streamed past its output reserve
  private Charge charge = Charge.NONE; // what the tenant was charged at the end
  private io.sluice.core.estimate.@Nullable NativeUsage nativeUsage; // Envoy's, at the end

  ResponseMeter(Sessions env, Subject subject) {
    this.env = env;
    this.subject = subject;
  }

  /**
   * Response headers from the upstream: its status (counted when {@code countStatus}; an overload
   * shrinks an adaptive pool, and its {@code retryAfterNanos}, negative if none, may pause it; only
   * the upstream's own answers, {@code source}, move the limit), and the usage reader for the body.
   */
  void headers(
      int status,
      @Nullable String contentType,
      boolean countStatus,
      long retryAfterNanos,
      AnswerSource source,
      @Nullable Permit p,
      @Nullable TokenEstimate e) {
    this.status = status;
    if (countStatus) {
      env.listener().on(new SessionEvent.UpstreamResponded(subject, status));
      PoolState pool = p == null ? null : AdaptiveSignals.pool(env, subject, p);
      if (p != null && pool != null) {
        pool.onAnswer(p, status, retryAfterNanos, source, env.ticker().nanos());
      }
    }
    usage = UsageExtractor.forResponse(contentType, env.estimator(), e == null ? null : e.model());
  }

  /**
   * The upstream failed after its 200 headers ({@code status}: the HTTP status its failure maps to,
   * a gRPC {@code grpc-status} in the response trailers): an adaptive pool learns it as it would
   * have from a failure at the headers (trailers-only), counted once (at the headers); the answer
   * ends as {@code status} (no time per token or reserve learned from it, charged as an upstream
   * error, a failed answer for the service levels).
   */
  void failedAfterHeaders(int status, long retryAfterNanos, @Nullable Permit p) {
    this.status = status;
    PoolState pool = p == null ? null : AdaptiveSignals.pool(env, subject, p);
    if (p != null && pool != null) {
      pool.onRevisedAnswer(p, status, retryAfterNanos, env.ticker().nanos());
    }
  }

  /** A response body chunk, read in place for the usage it reports. */
  void body(
      byte[] data,
      int offset,
      int length,
      boolean last,
      @Nullable Permit p,
      @Nullable TokenEstimate e,
      PoolPolicy runPool) {
    if (length > 0 && !firstChunkSeen && !last) {
      firstChunkSeen = true;
      firstChunkNanos = env.ticker().nanos();
      PoolState pool = AdaptiveSignals.pool(env, subject, p);
      if (p != null && pool != null && status / 100 == 2) {
        pool.onLatency(
            AdaptiveLimit.Signal.TTFT, firstChunkNanos - p.admittedAtNanos(), p.admittedAtNanos());
      }
    }
    UsageExtractor x = usage;
    if (x == null || length <= 0) {
      return;
    }
    bodySeen = true;
    if (last) {
      x.onLastChunk(data, offset, length);
    } else {
      x.onChunk(data, offset, length); // copies nothing
      if (x.isEventStream()) {
        meterInFlight(x.outputSoFar(), p, e, runPool);
      }
    }
  }

  /**
   * The answer streamed {@code produced} output tokens so far: past what the pool counts for it,
   * its charge grows to the tokens produced plus a quarter more (the rest expected; steps of 25 %,
   * so an answer that runs to 8× its reserve grows about 10 times), and the pool's free capacity
   * with it. Released with the permit.
   */
  private void meterInFlight(
      long produced, @Nullable Permit p, @Nullable TokenEstimate e, PoolPolicy runPool) {
    long counted = outputCharge(e);
    if (p == null || e == null || produced <= counted) {
      return;
    }
    long next = produced + Math.max(1, produced / 4);
    long more =
        runPool.workUnits(e.inputTokens(), next) - runPool.workUnits(e.inputTokens(), counted);
    grownCharge = next;
    boolean first = !overran;
    overran = true;
    long added = p.grow(more);
    env.listener().on(new SessionEvent.OutputOverran(subject, added, produced, first));
  }

  /** Output tokens the pool counts for the request now: the reserve of {@code e}, or grown past. */
  long outputCharge(@Nullable TokenEstimate e) {
    return overran ? grownCharge : e == null ? 0 : e.outputReserveTokens();
  }

  /** Envoy's native token usage, read at the response's end ({@link NativeUsageSource}). */
  void nativeUsage(io.sluice.core.estimate.NativeUsage u) {
    nativeUsage = u;
  }

  /** The end's charge made before this meter was ({@link #unmeteredCharge}). */
  void charged(Charge c) {
    charge = c;
  }

  /** What the tenant was charged at the end ({@link Charge#NONE} before, or without estimate). */
  Charge charge() {
    return charge;
  }

  /**
   * The answer's end for the events: {@code unseen}, why its end is not seen (null: seen); {@code
   * p}, the permit (null: none).
   */
  RequestFacts.End facts(@Nullable String unseen, @Nullable Permit p) {
    UsageExtractor x = usage;
    boolean complete = ChargeRule.complete(charge, x != null && x.complete());
    if (status == 0 && unseen == null && !overran && !complete && (p == null || !firstChunkSeen)) {
      return unbegun(charge);
    }
    return new RequestFacts.End(
        status,
        unseen == null ? "seen" : unseen,
        overran,
        charge,
        complete,
        p != null && firstChunkSeen ? firstChunkNanos - p.admittedAtNanos() : -1);
  }

  /** The end's facts when no answer began and nothing was charged but {@code charge}: shared. */
  private static RequestFacts.End unbegun(Charge charge) {
    if (charge == Charge.NONE) { // the admitted request's facts: nothing came yet
      return NOT_BEGUN;
    }
    RequestFacts.End last = lastUnanswered; // ended before any answer: the same value each time
    if (last != null && last.charge() == charge) {
      return last;
    }
    last = new RequestFacts.End(0, "seen", false, charge, false, -1);
    lastUnanswered = last;
    return last;
  }

  // --- a session makes its meter when the first response event comes ({@link RunningRequest}):
  // until then (a cancel or a refusal before any answer) these answer as an unused meter would

  /** {@link #facts} of a meter never made, whose request was charged {@code charge} at its end. */
  static RequestFacts.End unmeteredFacts(@Nullable String unseen, Charge charge) {
    // an unused meter: status 0, nothing overran, no usage read, so never complete
    return unseen == null
        ? unbegun(charge)
        : new RequestFacts.End(0, unseen, false, charge, false, -1);
  }

  /** {@link #end}'s charge of a meter never made (no answer began); none without an estimate. */
  static Charge unmeteredCharge(Outcome outcome, @Nullable TokenEstimate e) {
    return e == null ? Charge.NONE : ChargeRule.charge(outcome, e, NO_ANSWER);
  }

  private SessionEvent noted(io.sluice.core.estimate.NativeCheck c) {
    return new SessionEvent.Noted(subject, c);
  }

  /** Whether the answer is an event stream (its response headers came with its first token). */
  boolean eventStream() {
    UsageExtractor x = usage;
    return x != null && x.isEventStream();
  }

  /**
   * The response ended ({@code outcome}): the usage it reported, final, and what the request ran as
   * ({@code e}; null: never estimated, nothing charged) is charged ({@link ChargeRule}).
   */
  Usage end(Outcome outcome, @Nullable TokenEstimate e) {
    UsageExtractor x = usage;
    if (x != null) {
      x.onEnd();
    }
    ChargeRule.Answer a =
        x == null
            ? (status == 0 && !bodySeen // no response headers: the common cancel before them
                ? NO_ANSWER
                : new ChargeRule.Answer(false, status, bodySeen, false, false, 0, 0, Usage.NONE))
            : new ChargeRule.Answer(
                true,
                status,
                bodySeen,
                x.isEventStream(),
                x.complete(),
                x.meteredOutputTokens(),
                x.outputSoFar(),
                x.usage());
    io.sluice.core.estimate.NativeUsage n = nativeUsage;
    if (n != null) { // Envoy's usage came: the callback only then (no capture per request)
      a = NativeUsageSource.prefer(a, n, c -> env.listener().on(noted(c)));
    }
    if (e != null) {
      charge = ChargeRule.charge(outcome, e, a);
    }
    return a.usage();
  }
}
