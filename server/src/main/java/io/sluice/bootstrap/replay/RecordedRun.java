package io.sluice.bootstrap.replay;

import io.sluice.bootstrap.IsolatedRuntime;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionFront;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Subject;
import io.sluice.extproc.QueueTimer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A live run on a virtual clock, recorded: the bench's "live" side of {@code replay-check}. Every
 * arrival opens a real {@link AdmissionSession} on a runtime of the policy built by the server's
 * own factory ({@link IsolatedRuntime#forRecording}), is decided on its real body (the server's
 * estimator), and, admitted, is served by a token-step model of the bench's simulated upstream (K
 * requests at full speed, each prefill or decode step stretched by {@code active / K} beyond K,
 * evaluated when the step starts, as {@code SimulatedLlmUpstream} does); its client leaves at its
 * deadline or its own cancel time and retries a refusal that carries a Retry-After, as the bench's
 * load generator does. The server's decision log writes every record to {@code lines}: the recorded
 * run a replay reads.
 *
 * <p>Nothing here reads the wall clock or a thread: the same arrivals give the same records on a
 * loaded machine and an idle one. What it leaves out of a live run: the gRPC transport and the
 * Envoy emulator (the front end is this class), the resolver (the subject is built from the
 * arrival's pool, class and tenant as a replay builds it).
 */
public final class RecordedRun {
  /**
   * One client request of the run.
   *
   * @param atNanos arrival after the run's start
   * @param body the request body sent (the server estimates it), UTF-8
   * @param promptTokens prompt tokens the upstream counts (its prefill)
   * @param outputTokens tokens the upstream answers
   * @param deadlineNanos the client's deadline after arrival: it leaves then
   * @param cancelAfterNanos when it leaves of its own accord after arrival ({@link Long#MAX_VALUE}:
   *     never)
   */
  public record Arrival(
      long atNanos,
      String route,
      String pool,
      String className,
      String tenant,
      String body,
      int promptTokens,
      int outputTokens,
      long deadlineNanos,
      long cancelAfterNanos) {}

  /**
   * The simulated upstream (one per pool).
   *
   * @param batchSlots K: requests at full speed
   * @param prefillNanosPerToken prefill per prompt token
   * @param decodeNanosPerToken decode per output token after the first
   */
  public record Model(int batchSlots, long prefillNanosPerToken, long decodeNanosPerToken) {}

  /** Epoch millisecond of the run's start (its records' arrival times count from there). */
  static final long START_MILLIS = 1_800_000_000_000L;

  private final SluiceConfig config;
  private final Subjects subjects;
  private final Model model;
  private final int maxRetries;
  private final VirtualTime time = new VirtualTime(START_MILLIS);
  private final java.util.Map<String, Integer> active = new java.util.HashMap<>();
  private long served;
  private long refused;
  private long retries;

  private RecordedRun(SluiceConfig config, Model model, int maxRetries) {
    this.config = config;
    this.subjects = new Subjects(config);
    this.model = model;
    this.maxRetries = maxRetries;
  }

  /**
   * Runs {@code arrivals} (in order) against {@code config}, every decision record handed to {@code
   * lines}; returns {served, refused, retries}.
   */
  public static long[] run(
      SluiceConfig config,
      List<Arrival> arrivals,
      Model model,
      int maxRetries,
      Consumer<String> lines) {
    RecordedRun run = new RecordedRun(config, model, maxRetries);
    try (QueueTimer wheel = new QueueTimer();
        IsolatedRuntime rt =
            IsolatedRuntime.forRecording(
                config, run.time, run.time.clock(), wheel, run.time, lines)) {
      for (Arrival a : arrivals) {
        run.time.schedule(a.atNanos(), () -> run.send(rt, a, 0, run.time.nanos()));
      }
      long next;
      while ((next = run.time.nextDue()) != Long.MAX_VALUE) {
        run.time.advance(next);
        run.time.runDue();
      }
    }
    return new long[] {run.served, run.refused, run.retries};
  }

  private void send(IsolatedRuntime rt, Arrival a, int attempt, long arrivedAt) {
    long now = time.nanos();
    PoolPolicy pool = config.pools().get(a.pool());
    ClassPolicy cls = config.classes().get(a.className());
    Subject s =
        pool == null || cls == null
            ? null
            : subjects.of(
                pool, cls, a.tenant(), a.route(), "", now, arrivedAt + a.deadlineNanos() - now);
    if (s == null) {
      refused++;
      return; // the policy has no such route or tenant: nothing to record
    }
    Client c = new Client(rt, a, attempt, arrivedAt);
    byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
    c.session = rt.runtime().sessions().open(s, c, time.serial(), SessionSteps.NONE);
    c.session.begin(false, false, body.length, now);
    time.drain();
    if (c.wantsBody && !c.over) {
      c.session.decideWithBody(body, 0, body.length, now);
      time.drain();
    }
    long leave = Math.min(arrivedAt + a.deadlineNanos(), satAdd(arrivedAt, a.cancelAfterNanos()));
    time.schedule(leave - now, c::leave);
  }

  private static long satAdd(long a, long b) {
    return b == Long.MAX_VALUE ? Long.MAX_VALUE : a + b;
  }

  /** One attempt's front end: what Envoy and the client would do with the session's answers. */
  private final class Client implements SessionFront {
    final IsolatedRuntime rt;
    final Arrival arrival;
    final int attempt;
    final long arrivedAt;
    @Nullable AdmissionSession session;
    boolean wantsBody;
    boolean over;
    boolean running;
    @Nullable String pool;
    int tokensLeft;

    Client(IsolatedRuntime rt, Arrival arrival, int attempt, long arrivedAt) {
      this.rt = rt;
      this.arrival = arrival;
      this.attempt = attempt;
      this.arrivedAt = arrivedAt;
    }

    @Override
    public void admitted(boolean atBody) {
      AdmissionSession s = Objects.requireNonNull(session);
      pool = s.running().plan().pool().name();
      running = true;
      active.merge(pool, 1, Integer::sum);
      tokensLeft = Math.max(1, arrival.outputTokens());
      step(model.prefillNanosPerToken() * arrival.promptTokens(), true);
    }

    /** One prefill or decode step, stretched by the pool's load when it starts. */
    private void step(long baseNanos, boolean first) {
      int k = model.batchSlots();
      int n = active.getOrDefault(pool, 0);
      long d = n <= k ? baseNanos : (long) (baseNanos * ((double) n / k));
      time.schedule(d, () -> token(first));
    }

    private void token(boolean first) {
      if (over) {
        return;
      }
      AdmissionSession s = Objects.requireNonNull(session);
      if (first) {
        s.running().headers(200, "application/json", true);
      }
      if (--tokensLeft > 0) {
        step(model.decodeNanosPerToken(), false);
        return;
      }
      over = true;
      stopRunning();
      byte[] usage =
          ("{\"usage\":{\"prompt_tokens\":"
                  + arrival.promptTokens()
                  + ",\"completion_tokens\":"
                  + arrival.outputTokens()
                  + "}}")
              .getBytes(StandardCharsets.UTF_8);
      s.running().body(usage, 0, usage.length, true);
      s.release(Outcome.COMPLETED);
      served++;
    }

    private void stopRunning() {
      if (running) {
        running = false;
        active.merge(Objects.requireNonNull(pool), -1, Integer::sum);
      }
    }

    /** The client's deadline or its own cancel: it goes away (queued, held or mid-answer). */
    void leave() {
      if (over) {
        return;
      }
      over = true;
      stopRunning();
      Objects.requireNonNull(session).end(Outcome.CANCELLED);
    }

    @Override
    public void bodyWanted() {
      wantsBody = true;
    }

    @Override
    public void held(long holdMillis) {}

    @Override
    public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
      over = true;
      refused++;
      long retryAt = time.nanos() + retryAfterSeconds * 1_000_000_000L;
      if (retryAfterSeconds > 0
          && (status == 429 || status == 503)
          && attempt < maxRetries
          && retryAt < arrivedAt + arrival.deadlineNanos()
          && retryAt < satAdd(arrivedAt, arrival.cancelAfterNanos())) {
        retries++;
        time.schedule(
            retryAfterSeconds * 1_000_000_000L, () -> send(rt, arrival, attempt + 1, arrivedAt));
      }
    }

    @Override
    public void storeFailed(Throwable cause) {
      over = true;
      refused++;
      Objects.requireNonNull(session).end(Outcome.ERROR);
    }
  }
}
