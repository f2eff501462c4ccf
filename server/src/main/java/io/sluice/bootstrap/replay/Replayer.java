package io.sluice.bootstrap.replay;

import io.sluice.bootstrap.IsolatedRuntime;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionFront;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Sessions;
import io.sluice.core.session.Subject;
import io.sluice.extproc.QueueTimer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Replays records, in arrival order, against one policy: every request opens a real {@link
 * AdmissionSession} on an {@link IsolatedRuntime} of the policy (its pools, classes, tenant caps
 * and rates, queues, degrade ladder, adaptive limit), on a {@link VirtualTime}; an admitted request
 * is served by its pool's {@link Upstream} and released at its end with its recorded usage; a
 * request the record shows cancelled leaves when it did. Counts what the policy did ({@link Tally})
 * and how far its decisions agree with the recorded ones.
 *
 * <p>Memory: the requests in flight or queued, the upstream's jobs, the recorded ends of the
 * concurrency estimate, per-class means; never the records. Single-threaded.
 */
final class Replayer implements AutoCloseable {
  private final SluiceConfig config;
  private final Subjects subjects;
  private final Map<String, Double> knees;
  private final double defaultKnee;
  private @Nullable VirtualTime time;
  private @Nullable IsolatedRuntime runtime;
  private final QueueTimer wheel = new QueueTimer(); // the runtime's idle sweeps: never started
  private final Map<String, Upstream> upstreams = new HashMap<>();
  private final Map<String, RecordedConcurrency> recordedConcurrency = new HashMap<>();
  private final Map<String, long[]> means = new HashMap<>(); // pool/class: n, demand ns, output
  final Tally tally = new Tally();
  final Tally recorded = new Tally(); // what the record itself shows
  final Agreement agreement = new Agreement();
  long replayed;
  long unknown; // a pool or class the policy does not have
  long retriesNotSent; // recorded retries of an attempt this replay admitted or held
  long retriesDrawn; // retries of the replay's own refusals the record brings none of
  private final Retries retries = new Retries();

  /**
   * @param knees the knee of a pool's upstream by pool name; {@code defaultKnee} for the rest
   *     ({@link Double#POSITIVE_INFINITY}: no slowdown)
   */
  Replayer(SluiceConfig config, Map<String, Double> knees, double defaultKnee) {
    this.config = config;
    this.subjects = new Subjects(config);
    this.knees = Map.copyOf(knees);
    this.defaultKnee = defaultKnee;
  }

  private double knee(String pool) {
    return knees.getOrDefault(pool, defaultKnee);
  }

  /** Replays every record {@code in} hands out, then lets what is in flight end. */
  void run(RecordReader in) {
    Recorded r;
    while ((r = in.next()) != null) {
      VirtualTime t = time;
      if (t == null) {
        t = new VirtualTime(r.arrivalMillis());
        time = t;
        runtime = IsolatedRuntime.forReplay(config, t, t.clock(), wheel, t);
      }
      advanceTo(t.atNanos(r.arrivalNanos()));
      arrive(r);
      t.drain();
    }
    if (time != null) {
      advanceTo(Long.MAX_VALUE - 1);
    }
    for (Retries.Parked kept : retries.left()) {
      notSent(kept.record()); // its client's attempt was never decided
    }
  }

  /** Runs timers and upstream ends in time order up to {@code until}. */
  private void advanceTo(long until) {
    VirtualTime t = java.util.Objects.requireNonNull(time);
    while (true) {
      long timer = t.nextDue();
      long end = Long.MAX_VALUE;
      Upstream first = null;
      for (Upstream u : upstreams.values()) {
        long e = u.nextEnd();
        if (e < end) {
          end = e;
          first = u;
        }
      }
      long next = Math.min(timer, end);
      if (next > until || next == Long.MAX_VALUE) {
        break;
      }
      t.advance(next);
      if (first != null && end <= timer) {
        Upstream.Job j = first.pollEnded(next);
        if (j != null) {
          ((Request) j.owner).served(next);
        }
      }
      t.runDue();
      t.drain();
    }
    if (until < Long.MAX_VALUE - 1) {
      t.advance(until);
    }
  }

  private void arrive(Recorded r) {
    VirtualTime t = java.util.Objects.requireNonNull(time);
    String client = Retries.client(r);
    int attempt = retries.recorded(r, client);
    record(r);
    // a cancelled request's recorded service ends at its client's cancel, not at its answer's end:
    // served as long as it stays, it leaves at its cancel (never "completed" at that same instant)
    long demand = r.cancelled() && r.ran() ? cancelledDemand(r) : demand(r);
    if (client != null && retries.drives(client, t.nanos())) {
      notSent(r); // the replay sends its client's retries itself, timed by its own refusals
      return;
    }
    if (client != null && retries.holds(client)) {
      // its client retried a refusal this replay has not made (yet): kept until it does
      if (!retries.park(client, r, demand, attempt)) {
        notSent(r);
      }
      return;
    }
    replayed++;
    send(r, client, demand, attempt);
  }

  /**
   * A recorded retry its client would not have sent (the replay admitted its attempt), or sent at
   * another time (the replay refused its attempt sooner and sent the retry itself).
   */
  private void notSent(Recorded r) {
    retriesNotSent++;
    agreement.compare(r, Verdict.NOT_SENT, 0);
  }

  /** An attempt arrives now: {@code r} at its recorded time, or a retry (moved to now). */
  private void send(Recorded r, @Nullable String client, long demand, int attempt) {
    VirtualTime t = java.util.Objects.requireNonNull(time);
    long now = t.nanos();
    Tally.Row[] rows = tally.rowsOf(r.pool(), r.className(), r.tenant());
    Tally.arrived(rows);
    PoolPolicy pool = config.pools().get(r.pool());
    ClassPolicy cls = config.classes().get(r.className());
    if (pool == null || cls == null) {
      unknown++;
      decided(r, rows, Verdict.REFUSE + "unknown_route", 0, false);
      return;
    }
    Subject s = subjects.of(pool, cls, r.tenant(), r.route(), r.format(), now, r.deadlineNanos());
    if (s == null) {
      decided(r, rows, Verdict.REFUSE + Reason.UNKNOWN_TENANT.code(), 0, false);
      return;
    }
    Request q = new Request(r, client, rows, s, demand, attempt);
    retries.hold(
        client, now, s.deadlineNanos()); // before its session: a refusal takes it out again
    Sessions sessions = java.util.Objects.requireNonNull(runtime).runtime().sessions();
    q.session = sessions.open(s, q, t.serial(), SessionSteps.NONE);
    q.session.begin(false, false, -1, now);
    t.drain();
    if (q.wantsBody && q.verdict == null) {
      long output = Math.min(r.requestedOutputTokens(), cls.maxOutputTokens());
      TokenEstimate e =
          new TokenEstimate(
              r.inputTokens(),
              Math.max(0, output),
              "replay",
              null,
              null,
              true,
              false,
              FanOut.NONE,
              -1);
      // decided when its body came, as recorded (a slow upload, a loaded proxy)
      long bodyAfter = Math.max(0, r.decideAfterNanos());
      if (r.cancelled()) {
        bodyAfter = Math.min(bodyAfter, Math.max(0, r.endedAfterNanos() - 1));
      }
      if (bodyAfter == 0) {
        q.decide(e, now);
      } else {
        long at = now + bodyAfter;
        t.schedule(bodyAfter, () -> q.decide(e, at));
      }
    }
    if (r.cancelled()) {
      t.schedule(r.endedAfterNanos(), q::cancel);
    }
  }

  /**
   * The replay refused {@code q}: its client's next attempt, a Retry-After later if that is before
   * its deadline: the recorded retry kept for it; else, when the record brings none (it did not
   * refuse {@code q}) or brings it too late (it refused {@code q} later than the replay does), one
   * as often as the record shows clients retrying ({@link Retries}), and the record's later
   * attempts of that client are not sent.
   */
  private void refused(Request q, long retryAfterSeconds) {
    Retries.Parked kept = retries.refused(q.client);
    VirtualTime t = java.util.Objects.requireNonNull(time);
    long after = retryAfterSeconds * 1_000_000_000L;
    long at = t.epochNanos(t.nanos() + after);
    boolean fits = retryAfterSeconds > 0 && t.nanos() + after < q.subject.deadlineNanos();
    if (kept != null) {
      if (!fits || kept.record().leftBy(at)) {
        notSent(kept.record());
        return;
      }
      Recorded r = kept.record().sentAt(at);
      t.schedule(
          after,
          () -> {
            replayed++;
            send(r, q.client, kept.demand(), kept.attempt());
          });
      return;
    }
    boolean recordRetries = Verdict.refused(q.rec.decided());
    if (recordRetries
        && t.epochNanos(t.nanos()) >= q.rec.arrivalNanos() + q.rec.endedAfterNanos()) {
      return; // refused as late as recorded or later: the record's retry (if any) comes
    }
    if (recordRetries) {
      retries.drive(q.client, q.subject.deadlineNanos()); // the record's retry would come late
    }
    if (fits && !q.rec.leftBy(at) && retries.invents(q.attempt)) {
      retriesDrawn++;
      retries.drive(q.client, q.subject.deadlineNanos());
      Recorded r = q.rec.sentAt(at);
      t.schedule(after, () -> send(r, q.client, q.demand, q.attempt + 1));
    }
  }

  /** The recorded decision and end, counted as the replay counts its own. */
  private void record(Recorded r) {
    Tally.Row[] rows = recorded.rowsOf(r.pool(), r.className(), r.tenant());
    Tally.arrived(rows);
    boolean waited = r.queueWaitMs() > 0 || r.decided().equals(Verdict.QUEUE);
    Tally.decided(rows, r.decided(), r.queueWaitMs(), waited);
    if (r.ran()) {
      Tally.ended(rows, r.goodput(), r.outputTokens(), r.serviceMs(), r.cancelled());
    }
  }

  /**
   * The request's service demand: its recorded service time without the slowdown of the concurrency
   * it was recorded at; a request the record never ran takes its class's mean so far.
   */
  private long demand(Recorded r) {
    String key = r.pool() + "/" + r.className();
    long[] m = means.computeIfAbsent(key, k -> new long[3]);
    if (!r.ran()) {
      return m[0] == 0 ? 1_000_000_000L : m[1] / m[0];
    }
    int concurrency =
        recordedConcurrency
            .computeIfAbsent(r.pool(), k -> new RecordedConcurrency())
            .admit(
                r.arrivalNanos(),
                r.arrivalNanos() + r.admittedAfterNanos(),
                r.arrivalNanos()
                    + Math.max(r.endedAfterNanos(), r.admittedAfterNanos() + r.serviceNanos()),
                r.timed() ? 0 : Recorded.ROUNDING_MS * 1_000_000L);
    long d = Upstream.demand(r.serviceNanos(), concurrency, knee(r.pool()));
    if (!r.cancelled() && m[0] < Long.MAX_VALUE / 4) {
      m[0]++;
      m[1] += d;
      m[2] += Math.max(0, r.outputTokens());
    }
    return d;
  }

  /**
   * The demand of a request whose client left mid-answer: its answer needed more than it ran (its
   * recorded service is the time until the cancel), so the larger of that plus a millisecond and
   * its class's mean demand so far. A replay that serves it as recorded sees its client leave
   * first; one that serves it sooner may see it complete.
   */
  private long cancelledDemand(Recorded r) {
    long soFar = demand(r); // counts it in the recorded concurrency; not in the class's mean
    long[] m = means.get(r.pool() + "/" + r.className());
    long mean = m == null || m[0] == 0 ? 0 : m[1] / m[0];
    return Math.max(soFar + CANCEL_MARGIN_NANOS, mean);
  }

  /** How much longer than it ran a cancelled answer needs at least (beyond rounding). */
  static final long CANCEL_MARGIN_NANOS = 1_000_000L;

  private long meanOutput(Recorded r) {
    long[] m = means.get(r.pool() + "/" + r.className());
    return m == null || m[0] == 0 ? r.requestedOutputTokens() / 2 : m[2] / m[0];
  }

  private void decided(
      Recorded r, Tally.Row[] rows, String verdict, long waitNanos, boolean waited) {
    Tally.decided(rows, verdict, waitNanos / 1_000_000L, waited);
    agreement.compare(r, verdict, waited ? waitNanos / 1_000_000L : 0);
  }

  /** One replayed request: the front end of its session. */
  private final class Request implements SessionFront {
    final Recorded rec;
    final @Nullable String client; // its client's attempts' name (timed records)
    final Tally.Row[] rows;
    final Subject subject;
    final long demand;
    final int attempt; // its client's, 1 for the first
    @Nullable AdmissionSession session;
    boolean wantsBody;
    boolean held;
    @Nullable String verdict;
    Upstream.@Nullable Job job;
    @Nullable Upstream upstream;
    boolean over;
    long decidingAt; // when its body came: its wait counts from there

    Request(
        Recorded rec,
        @Nullable String client,
        Tally.Row[] rows,
        Subject subject,
        long demand,
        int attempt) {
      this.rec = rec;
      this.client = client;
      this.rows = rows;
      this.subject = subject;
      this.demand = demand;
      this.attempt = attempt;
      this.decidingAt = subject.arrivalNanos();
    }

    private long now() {
      return java.util.Objects.requireNonNull(time).nanos();
    }

    @Override
    public void admitted(boolean atBody) {
      AdmissionSession s = java.util.Objects.requireNonNull(session);
      String rung = s.running().plan().rung();
      long waited = now() - decidingAt;
      verdict = rung != null ? Verdict.DEGRADE + rung : held ? Verdict.QUEUE : Verdict.ADMIT;
      decided(rec, rows, verdict, waited, held);
      Retries.Parked kept = retries.settled(client);
      if (kept != null) {
        notSent(kept.record());
      }
      String pool = s.running().plan().pool().name();
      Upstream u = upstreams.computeIfAbsent(pool, p -> new Upstream(knee(p), now()));
      upstream = u;
      job = u.start(this, demand, now());
    }

    /** Its body came: decided on the recorded estimate. */
    void decide(TokenEstimate e, long at) {
      if (over || verdict != null) {
        return;
      }
      decidingAt = at;
      java.util.Objects.requireNonNull(session).decideWithEstimate(e, at);
    }

    @Override
    public void bodyWanted() {
      wantsBody = true;
    }

    @Override
    public void held(long holdMillis) {
      held = true;
    }

    @Override
    public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
      verdict = Verdict.REFUSE + reason.code();
      decided(rec, rows, verdict, now() - decidingAt, held);
      over = true;
      Replayer.this.refused(this, retryAfterSeconds);
    }

    @Override
    public void storeFailed(Throwable cause) {
      verdict = Verdict.REFUSE + "store_failed";
      decided(rec, rows, verdict, 0, held);
      Retries.Parked kept = retries.refused(client);
      if (kept != null) {
        notSent(kept.record());
      }
      over = true;
      java.util.Objects.requireNonNull(session).end(Outcome.ERROR);
    }

    /** Its upstream answered in full: released with its recorded usage. */
    void served(long now) {
      AdmissionSession s = java.util.Objects.requireNonNull(session);
      Upstream.Job j = job;
      long started = j == null ? now : j.startedAt;
      job = null;
      over = true;
      int status = rec.upstreamStatus() > 0 ? rec.upstreamStatus() : 200;
      long output = rec.outputTokens() >= 0 ? rec.outputTokens() : meanOutput(rec);
      s.running().headers(status, "application/json", true);
      byte[] usage =
          ("{\"usage\":{\"prompt_tokens\":"
                  + rec.actualInputTokens()
                  + ",\"completion_tokens\":"
                  + output
                  + "}}")
              .getBytes(StandardCharsets.UTF_8);
      s.running().body(usage, 0, usage.length, true);
      boolean failed = status >= 400 || rec.outcome() == io.sluice.api.v1.Outcome.OUTCOME_ERROR;
      s.release(failed ? Outcome.ERROR : Outcome.COMPLETED);
      boolean good = !failed && now <= subject.deadlineNanos();
      Tally.ended(rows, good, output, (now - started) / 1_000_000L, false);
    }

    /** The client left when its record says it did. */
    void cancel() {
      if (over) {
        return;
      }
      over = true;
      AdmissionSession s = java.util.Objects.requireNonNull(session);
      Upstream.Job j = job;
      Upstream u = upstream;
      if (j != null && u != null) {
        u.remove(j, now());
        Tally.ended(rows, false, 0, (now() - j.startedAt) / 1_000_000L, true);
        job = null;
      } else if (verdict == null) { // left the queue: a decision of its own
        verdict = Verdict.REFUSE + "cancelled";
        decided(rec, rows, verdict, now() - decidingAt, held);
        Retries.Parked kept = retries.settled(client); // its client left: it sends no retry
        if (kept != null) {
          notSent(kept.record());
        }
      }
      s.end(Outcome.CANCELLED);
    }
  }

  @Override
  public void close() {
    IsolatedRuntime r = runtime;
    if (r != null) {
      r.close();
    }
    wheel.close();
  }
}
