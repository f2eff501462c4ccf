package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.LogQuantile;
import io.sluice.core.queue.ServiceModel;
import io.sluice.core.queue.WaitPredictor;
import java.util.ArrayList;
import java.util.List;

/**
 * What one pool has learned about how long its requests take, and what it predicts from that: the
 * {@link WaitPredictor} (drain rate and mean service time per work unit), the pool's fitted {@link
 * ServiceModel} (service time from input and output tokens) and the tails of actual ÷ predicted
 * service, per class and pool-wide. Fed by {@link #onRelease}; read by the deadline checks ({@link
 * #deadlineServiceNanos}) and the wait and drain predictions.
 *
 * <p>Not thread-safe: guarded by the pool lock. Time is an argument.
 */
final class ServiceTimes {
  /**
   * Deadline checks use this quantile of a class's service time: a request started with that much
   * time left misses its deadline only if its answer is among the longest 10 % of its class (answer
   * lengths are unknown at admission).
   */
  static final double SERVICE_QUANTILE = 0.9;

  static final double SERVICE_QUANTILE_STEP = 0.1;

  /** Completions of a class before its own quantile is used. */
  static final int SERVICE_QUANTILE_WARMUP = 20;

  static final int SERVICE_HALF_LIFE_SAMPLES = 200;

  static final int SERVICE_MIN_SAMPLES = 20;

  /** Half-life of the predictor's drain-rate average. */
  static final long RATE_HALF_LIFE_NANOS = 10_000_000_000L;

  /** Completions seen before the model was ready, replayed into the tails once it is. */
  private record Unmodelled(ClassSlot slot, long inputTokens, long outputTokens, long held) {}

  private final ServiceModel serviceModel =
      new ServiceModel(SERVICE_HALF_LIFE_SAMPLES, SERVICE_MIN_SAMPLES);
  private final List<Unmodelled> unmodelled = new ArrayList<>();

  /** The pool-wide tail of actual ÷ predicted service, for classes without their own yet. */
  private final LogQuantile poolOverrun = newTail();

  /**
   * The median end-to-end time (admission to the response's end) of a request whose end is not seen
   * ({@link #tailNanos}): the median rather than the mean, because one answer cut at its deadline
   * or ten times the usual length moves a mean for many completions, and every request held on the
   * prediction would pay for it; a class's answers are alike enough that the typical one is the
   * right length to hold.
   */
  static final double TAIL_QUANTILE = 0.5;

  static final double TAIL_QUANTILE_STEP = 0.05;

  /** Completions (whose end was seen) of a class, or of the pool, before its median is used. */
  static final int TAIL_WARMUP = 10;

  /** The pool-wide median end-to-end time, for classes without their own yet. */
  private final LogQuantile poolEndToEnd = newMedian();

  private WaitPredictor predictor;

  /** The largest work of a completion that taught the predictor a service time. */
  private long maxWorkSeen;

  /** Nothing learned yet, for a pool of {@code policy}. */
  ServiceTimes(PoolPolicy policy) {
    this.predictor = new WaitPredictor(predictorConfig(policy));
  }

  static LogQuantile newTail() {
    return new LogQuantile(SERVICE_QUANTILE, SERVICE_QUANTILE_STEP, SERVICE_QUANTILE_WARMUP);
  }

  static LogQuantile newMedian() {
    return new LogQuantile(TAIL_QUANTILE, TAIL_QUANTILE_STEP, TAIL_WARMUP);
  }

  /**
   * The predicted end-to-end time of a request of class {@code k} holding {@code work} units whose
   * response end will not be seen, in this order:
   *
   * <ol>
   *   <li>once the pool's {@link ServiceModel} is fitted (from answers of any of its routes seen to
   *       end), the request's reserved output is known and its response headers came with its first
   *       token (a streamed answer): its own headers time ({@code headersNanos}, measured for this
   *       very request: queueing upstream, prefill, the first token) plus the rest of the answer,
   *       {@code b × reservedOutput}; when the fit could not separate a fixed term (its time per
   *       token then includes the first token), the model's whole prediction, at least the headers
   *       time; not when the fit has a fixed term and no time per output token (the reserves seen
   *       never varied: that time is unknown, not 0);
   *   <li>the class's median end-to-end time once {@link #TAIL_WARMUP} of its completions were seen
   *       to end;
   *   <li>the pool's median end-to-end time;
   *   <li>the pool's mean time per work unit × {@code work};
   *   <li>with no response end ever seen on the pool, its {@code defaultServiceTime}: a guess
   *       ({@link #tailOnGuess}).
   * </ol>
   *
   * @param headersNanos admission to the response headers, negative if unknown
   */
  long tailNanos(ClassSlot k, long work, long inputTokens, long outputTokens, long headersNanos) {
    if (serviceModel.ready() && outputTokens >= 0 && headersNanos >= 0) {
      double perToken = serviceModel.nanosPerOutputToken();
      if (serviceModel.fixedNanos() <= 0) {
        // no fixed term: its per-token times carry the first token too
        return ceil(Math.max(headersNanos, serviceModel.predictNanos(inputTokens, outputTokens)));
      }
      if (perToken > 0) {
        return ceil(headersNanos + perToken * outputTokens);
      }
      // a fixed term and no time per output token: the reserves seen did not vary, so the time
      // per token is unknown (not 0): the medians below
    }
    if (k.endToEnd().ready()) {
      return ceil(k.endToEnd().value());
    }
    if (poolEndToEnd.ready()) {
      return ceil(poolEndToEnd.value());
    }
    return predictor.expectedServiceNanos(work);
  }

  /** As {@link #tailNanos(ClassSlot, long, long, long, long)} with no tokens nor headers time. */
  long tailNanos(ClassSlot k, long work) {
    return tailNanos(k, work, -1, -1, -1);
  }

  /**
   * True while no response of the pool was seen to end: a response whose end is not seen is then
   * held for the pool's {@code defaultServiceTime}, a guess, not a measurement.
   */
  boolean tailOnGuess() {
    // the model and the medians outlive a reconfiguration that renews the predictor
    return !predictor.hasServiceSamples() && !serviceModel.ready() && !poolEndToEnd.ready();
  }

  private static long ceil(double nanos) {
    return (long) Math.min(Long.MAX_VALUE / 4.0, Math.ceil(nanos));
  }

  /** Keeps what was learned unless the predictor's settings changed. */
  void reconfigure(PoolPolicy policy) {
    WaitPredictor.Config pc = predictorConfig(policy);
    if (!predictor.config().equals(pc)) {
      this.predictor = new WaitPredictor(pc);
      this.maxWorkSeen = 0;
    }
  }

  private static WaitPredictor.Config predictorConfig(PoolPolicy policy) {
    return new WaitPredictor.Config(
        policy.capacityWorkUnits(),
        RATE_HALF_LIFE_NANOS,
        policy.defaultServiceTime().toNanos(),
        20,
        policy.maxRequests());
  }

  WaitPredictor predictor() {
    return predictor;
  }

  /** True once a service time was measured (before that, deadline checks do not refuse). */
  boolean hasSamples() {
    return predictor.hasServiceSamples();
  }

  /**
   * Service time of a request of class {@code k} for deadline checks. Once the pool's {@link
   * ServiceModel} is fitted: the model's prediction from the request's input and reserved output
   * tokens, times the {@link #SERVICE_QUANTILE} of (actual ÷ predicted) of the class once it has
   * completed {@link #SERVICE_QUANTILE_WARMUP} requests, of the whole pool until then. Before that,
   * or when the request's token split is unknown: the pool's mean time per work unit × {@code work}
   * (its default service time before any completion).
   *
   * <p>Never beyond the evidence: a request larger than {@link ServiceModel#EVIDENCE_FACTOR} × the
   * largest input, reserved output (or work) of a completion seen is predicted as one of that size.
   * A fit on short answers would otherwise predict a long answer from a time per token that is
   * mostly the first token, refuse it on an idle pool, and never see the completion that would
   * correct it; capped, such a request is refused only for what the evidence shows (the queue wait,
   * or a deadline shorter than the largest answers seen take), and its completion widens the
   * evidence.
   */
  long deadlineServiceNanos(ClassSlot k, AdmissionRequest request, long work) {
    LogQuantile tail = k.overrun().ready() ? k.overrun() : poolOverrun;
    if (request.hasTokenSplit() && serviceModel.ready() && tail.ready()) {
      double predicted =
          serviceModel.predictWithinEvidenceNanos(request.inputTokens(), request.outputTokens());
      if (predicted > 0) {
        return (long) Math.min(Long.MAX_VALUE / 4.0, Math.ceil(predicted * tail.value()));
      }
    }
    if (!predictor.hasServiceSamples()) {
      return predictor.expectedServiceNanos(work);
    }
    // the mean time per work unit, for no more work than the completions seen show
    long evidenced = (long) Math.min(work, ServiceModel.EVIDENCE_FACTOR * maxWorkSeen);
    return predictor.expectedServiceNanos(evidenced);
  }

  /**
   * Time for completions to drain {@code work} units and {@code requests} requests (the basis of a
   * 503 Retry-After), on whichever dimension binds.
   */
  long drainNanos(long work, long requests) {
    return predictor.predictedDrainNanos(work, requests);
  }

  /**
   * Learns from one released permit of class {@code k}. Every release, whatever its outcome, frees
   * its work and its request slot at the stream's end, so every release feeds the drain rate: the
   * wait predictor learns even when the adapter never sees a response (response phases not sent to
   * Sluice, so every stream ends as a cancel). Only a completed response is a service-time sample;
   * a cancelled one is a lower bound for the tails (the client may have left early). A permit whose
   * response end was not seen ({@link Permit#endUnseen}) feeds the drain rate only.
   */
  void onRelease(ClassSlot k, Permit permit, Outcome outcome, long nowNanos) {
    long held = nowNanos - permit.admittedAtNanos();
    predictor.onCompletion(permit.workUnits(), nowNanos);
    if (permit.endUnseen()) {
      // held on the prediction (tailNanos): its hold is that guess, not a measurement; it freed its
      // work (the drain rate above) but teaches no service time
      return;
    }
    if (outcome == Outcome.COMPLETED && held > 0) {
      double x = LogQuantile.logOf(held); // one log for both tails
      k.endToEnd().onLogSample(x);
      poolEndToEnd.onLogSample(x);
    } else if (outcome == Outcome.CANCELLED) {
      k.endToEnd().onAtLeast(held);
      poolEndToEnd.onAtLeast(held);
    }
    boolean split = permit.inputTokens() >= 0 && permit.outputTokens() >= 0;
    if (outcome == Outcome.CANCELLED) {
      // the client left mid-answer: its service would have taken at least this long
      if (split && serviceModel.ready()) {
        double predicted = serviceModel.predictNanos(permit.inputTokens(), permit.outputTokens());
        if (predicted > 0) {
          k.overrun().onAtLeast(held / predicted);
          poolOverrun.onAtLeast(held / predicted);
        }
      }
    }
    if (outcome == Outcome.COMPLETED) {
      predictor.onServiceTime(permit.workUnits(), Math.max(0, held));
      maxWorkSeen = Math.max(maxWorkSeen, permit.workUnits());
      if (split && held > 0) {
        if (serviceModel.ready()) {
          double predicted = serviceModel.predictNanos(permit.inputTokens(), permit.outputTokens());
          if (predicted > 0) {
            double x = LogQuantile.logOf(held / predicted); // out of sample: before it is fitted
            k.overrun().onLogSample(x);
            poolOverrun.onLogSample(x);
          }
        }
        boolean wasReady = serviceModel.ready();
        serviceModel.onSample(permit.inputTokens(), permit.outputTokens(), held);
        if (!wasReady) {
          learnTailOnceModelled(k, permit, held);
        }
      }
    }
  }

  /**
   * Keeps a completion seen while the service model was not ready; when the model becomes ready,
   * replays them all into the class and pool tails (against the first fitted model), so the tails
   * are usable as soon as the model is instead of after as many completions again.
   */
  private void learnTailOnceModelled(ClassSlot k, Permit permit, long held) {
    if (unmodelled.size() >= 4 * SERVICE_MIN_SAMPLES) {
      unmodelled.remove(0); // bounded while the model cannot become ready
    }
    unmodelled.add(new Unmodelled(k, permit.inputTokens(), permit.outputTokens(), held));
    if (!serviceModel.ready()) {
      return;
    }
    for (Unmodelled u : unmodelled) {
      double predicted = serviceModel.predictNanos(u.inputTokens(), u.outputTokens());
      if (predicted > 0) {
        double x = LogQuantile.logOf(u.held() / predicted);
        u.slot().overrun().onLogSample(x);
        poolOverrun.onLogSample(x);
      }
    }
    unmodelled.clear();
  }
}
