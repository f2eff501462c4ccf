package io.sluice.harness;

import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.UpstreamRequest;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Open-loop load against one {@link Rig}: Poisson arrivals following the workload's phases, tenants
 * and classes drawn by share, prompt and answer lengths drawn uniformly, a client deadline per
 * request (the client disconnects when it passes), optional voluntary disconnects, and bounded
 * retries after {@code Retry-After}. Bounded in count and time: at most {@link
 * Workload#maxArrivals()} arrivals (each with at most {@code maxRetries} retries), none after the
 * phases, and the run ends when nothing is in flight or the drain time ran out. In-process and
 * loopback only.
 *
 * <p>Not thread-safe; one run at a time per instance. Each run uses the rig's fresh counters.
 */
public final class LoadGenerator {

  /**
   * A once-per-second snapshot for live progress lines. Counts are of logical requests (one
   * arrival, whatever its retries), so {@code offered == admitted + refused + unserved + waiting}
   * at every snapshot; only {@code refusedAttempts} counts HTTP attempts.
   *
   * @param second seconds since the run started
   * @param offered logical requests that arrived
   * @param admitted of those, requests that reached the upstream (once each, whatever came next)
   * @param refused requests whose final answer was a refusal before reaching the upstream
   * @param unserved requests that ended before reaching the upstream without a refusal: deadline
   *     passed or the client hung up while waiting, or an error
   * @param waiting requests not ended that have not reached the upstream (held by admission, or
   *     waiting to retry after a refusal)
   * @param completed goodput: admitted requests answered completely before their deadline
   * @param refusedAttempts refused attempts (429/503), retries included
   * @param upstreamActive generations running in the upstream
   */
  public record Progress(
      int second,
      long offered,
      long admitted,
      long refused,
      long unserved,
      long waiting,
      long completed,
      long refusedAttempts,
      int upstreamActive) {}

  private final Workload workload;

  public LoadGenerator(Workload workload) {
    this.workload = workload;
  }

  /** Runs the workload against {@code rig}; {@code progress} is called once per second. */
  public RunReport run(Rig rig, Consumer<Progress> progress) throws InterruptedException {
    return run(rig, progress, o -> {});
  }

  /**
   * As {@link #run(Rig, Consumer)}, and {@code outcomes} is told how each logical request ended,
   * once, when it ends (from the thread that ended it, so it must be thread-safe); requests still
   * open when the drain time runs out are told as {@code unfinished} before the report is made.
   */
  public RunReport run(Rig rig, Consumer<Progress> progress, Consumer<Outcome> outcomes)
      throws InterruptedException {
    return new LoadRun(workload, rig, progress, outcomes).execute();
  }

  /**
   * How one logical request ended, for scenarios that judge requests one by one. Times are
   * milliseconds since the run started.
   *
   * @param requestClass the workload class's name
   * @param tenant the tenant's name
   * @param phase index of its arrival phase
   * @param arrivalMillis when it arrived
   * @param upstreamMillis when it first reached the upstream (was admitted); -1 if it never did
   * @param endMillis when it ended
   * @param ending {@code completed} (answered in full before its deadline), {@code deadline},
   *     {@code cancelled}, {@code refused}, {@code error}, or {@code unfinished} (still open when
   *     the drain time ran out)
   * @param detail the refusal reason ({@code x-sluice-reason}) or the error; for a deadline or a
   *     hang-up, {@code mid} when the answer had started; empty otherwise
   * @param attempts HTTP attempts sent (0 when its deadline passed before the first was sent)
   * @param ttftFromArrivalMillis first token, from arrival (retry waits included); -1 unless
   *     completed
   * @param outputTokens the answer length the workload drew for it (the upstream may stop earlier,
   *     at a {@code max_tokens} that admission lowered)
   * @param headers the response headers of its last attempt (empty when none came)
   * @param upstreamRequest its last attempt as the upstream received it (after every mutation),
   *     empty when that attempt never reached the upstream
   * @param tries its attempts that ended, in order
   */
  public record Outcome(
      String requestClass,
      String tenant,
      int phase,
      long arrivalMillis,
      long upstreamMillis,
      long endMillis,
      String ending,
      String detail,
      int attempts,
      long ttftFromArrivalMillis,
      int outputTokens,
      HttpHeaders headers,
      Optional<UpstreamRequest> upstreamRequest,
      List<Try> tries) {
    public Outcome {
      headers = headers.copy();
      tries = List.copyOf(tries);
    }

    @Override
    public HttpHeaders headers() {
      return headers.copy();
    }

    /** The first value of a response header of the last attempt. */
    public Optional<String> header(String name) {
      return headers.first(name);
    }

    public boolean completed() {
      return ending.equals("completed");
    }
  }

  /**
   * One HTTP attempt of a logical request, in milliseconds since the run started.
   *
   * @param startMillis when it was sent
   * @param admittedMillis when it reached the upstream; -1 if it did not (refused, or it ended
   *     while held)
   * @param endMillis when it ended
   * @param status the HTTP status the client got (0: none, e.g. it hung up while held)
   */
  public record Try(long startMillis, long admittedMillis, long endMillis, int status) {}

  /** The upstream capacity in requests per second at full speed (K / mean service time). */
  public static double capacityPerSecond(Workload w, SimulatedLlmUpstream.Settings s) {
    double shares = w.classes().stream().mapToDouble(Workload.RequestClass::share).sum();
    double meanServiceNanos = 0;
    for (Workload.RequestClass c : w.classes()) {
      double service =
          s.prefillPerInputToken().toNanos() * c.meanPromptTokens()
              + s.decodePerOutputToken().toNanos() * c.meanOutputTokens();
      meanServiceNanos += service * c.share() / shares;
    }
    return s.batchSlots() / (meanServiceNanos / 1e9);
  }

  /**
   * Tokens a workload would spend if every request were served on arrival at full speed: on
   * completions, on requests whose deadline passes first, and on answers whose client hangs up
   * (prompt plus tokens generated until then).
   */
  public record ServedOnArrival(long usefulTokens, long missedDeadlineTokens, long hungUpTokens) {
    /** Hang-up tokens as a fraction of all tokens spent. */
    public double hungUpFraction() {
      long all = usefulTokens + missedDeadlineTokens + hungUpTokens;
      return all == 0 ? 0 : (double) hungUpTokens / all;
    }

    /** Missed-deadline tokens as a fraction of all tokens spent. */
    public double missedDeadlineFraction() {
      long all = usefulTokens + missedDeadlineTokens + hungUpTokens;
      return all == 0 ? 0 : (double) missedDeadlineTokens / all;
    }
  }

  /**
   * What the workload's own deadlines and hang-ups would waste if every request started at the
   * upstream the moment it arrived and ran at full speed (no queue, no sharing). Hang-ups during an
   * answer cost its prompt and the tokens generated so far whatever admission does; this is that
   * cost when nobody waits, the floor beside a run's {@link RunReport#tokensOnHangUps()} (the same
   * clients' hang-ups in the run) and the part no admission decision can avoid.
   */
  public static ServedOnArrival wasteIfServedOnArrival(
      Workload w, SimulatedLlmUpstream.Settings s) {
    long useful = 0;
    long missed = 0;
    long hungUp = 0;
    for (Arrivals.Arrival a : Arrivals.arrivals(w)) {
      Arrivals.ServedOnArrivalCost c = Arrivals.servedOnArrival(a, s);
      switch (c.ending()) {
        case COMPLETED -> useful += c.tokens();
        case DEADLINE -> missed += c.tokens();
        case CANCELLED -> hungUp += c.tokens();
        default -> throw new IllegalStateException("served on arrival: " + c.ending());
      }
    }
    return new ServedOnArrival(useful, missed, hungUp);
  }
}
