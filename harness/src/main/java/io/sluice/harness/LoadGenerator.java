package io.sluice.harness;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.UpstreamRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;
import org.HdrHistogram.Histogram;

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

  /**
   * Diagnostics: when the system property {@code sluice.bench.trace} names a directory, every run
   * writes one CSV row per attempt there ({@code <rig>.csv}): arrival, start, reaching the
   * upstream, end, deadline, voluntary cancel time, sizes, outcome and tokens spent.
   */
  private static final String TRACE_DIR = System.getProperty("sluice.bench.trace");

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
    return new Run(rig, progress, outcomes).execute();
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
   * One arrival of a workload, drawn before a run starts, so the same seed gives the same arrivals
   * in every run and in {@link #wasteIfServedOnArrival}.
   *
   * @param phase index of the arrival phase
   * @param atNanos arrival time since the run started
   * @param cancelAfterNanos when the client disconnects on its own, after arrival ({@link
   *     Long#MAX_VALUE}: it does not)
   */
  record Arrival(
      int phase,
      long atNanos,
      Workload.RequestClass requestClass,
      Workload.Tenant tenant,
      int promptTokens,
      int outputTokens,
      long cancelAfterNanos,
      int maxTokens) {}

  /**
   * A tenant named {@code class:<name>} sends every request of class {@code <name>} and no other
   * (clients of one application are one tenant); otherwise {@code drawn}.
   */
  private static Workload.Tenant ownTenant(
      Workload w, Workload.RequestClass c, Workload.Tenant drawn) {
    for (Workload.Tenant t : w.tenants()) {
      if (t.name().equals("class:" + c.name())) {
        return t;
      }
    }
    return drawn;
  }

  /** The workload's arrivals, in order: Poisson per phase, class, tenant and sizes by share. */
  static List<Arrival> arrivals(Workload w) {
    SplittableRandom random = new SplittableRandom(w.seed());
    // max_tokens ranges draw from their own stream, so a workload's arrivals, classes and sizes
    // are the same whatever its clients send as max_tokens (static, range or the answer's length)
    SplittableRandom caps = new SplittableRandom(w.seed() ^ 0x5DEECE66DL);
    double classShares = w.classes().stream().mapToDouble(Workload.RequestClass::share).sum();
    double tenantShares = w.tenants().stream().mapToDouble(Workload.Tenant::share).sum();
    List<Arrival> out = new ArrayList<>();
    long at = 0;
    for (int p = 0; p < w.phases().size(); p++) {
      Workload.Phase phase = w.phases().get(p);
      long end = at + phase.duration().toNanos();
      if (phase.ratePerSecond() > 0) {
        long next = at + exponentialNanos(random, phase.ratePerSecond());
        while (next - end < 0 && out.size() < w.maxArrivals()) {
          Workload.RequestClass c =
              pick(random, w.classes(), Workload.RequestClass::share, classShares);
          Workload.Tenant t = pick(random, w.tenants(), Workload.Tenant::share, tenantShares);
          t = ownTenant(w, c, t); // after the draw: other workloads' arrivals stay the same
          int prompt = uniform(random, c.promptTokensMin(), c.promptTokensMax());
          int output = uniform(random, c.outputTokensMin(), c.outputTokensMax());
          long cancelAfter = Long.MAX_VALUE;
          if (w.cancelFraction() > 0 && random.nextDouble() < w.cancelFraction()) {
            long lo = w.cancelMin().toNanos();
            long hi = Math.max(lo, w.cancelMax().toNanos());
            cancelAfter = lo + (long) (random.nextDouble() * (hi - lo));
          }
          int maxTokens = c.outputTokensMax();
          if (c.maxTokensMax() == Workload.RequestClass.ORACLE) {
            maxTokens = output;
          } else if (c.maxTokensMax() > 0) { // own stream: the arrivals stay the same
            maxTokens = uniform(caps, c.maxTokensMin(), c.maxTokensMax());
          }
          out.add(new Arrival(p, next, c, t, prompt, output, cancelAfter, maxTokens));
          next += exponentialNanos(random, phase.ratePerSecond());
        }
      }
      at = end;
    }
    return out;
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
    for (Arrival a : arrivals(w)) {
      ServedOnArrivalCost c = servedOnArrival(a, s);
      switch (c.ending()) {
        case COMPLETED -> useful += c.tokens();
        case DEADLINE -> missed += c.tokens();
        case CANCELLED -> hungUp += c.tokens();
        default -> throw new IllegalStateException("served on arrival: " + c.ending());
      }
    }
    return new ServedOnArrival(useful, missed, hungUp);
  }

  /** How one arrival ends when served on arrival at full speed, and the tokens it costs. */
  private record ServedOnArrivalCost(Ending ending, long tokens) {}

  private static ServedOnArrivalCost servedOnArrival(Arrival a, SimulatedLlmUpstream.Settings s) {
    long prefillPerToken = s.prefillPerInputToken().toNanos();
    long decode = s.decodePerOutputToken().toNanos();
    int prompt =
        SimulatedLlmUpstream.promptTokens(
            body(a.promptTokens(), a.outputTokens(), a.maxTokens()).length, s);
    int output = Math.min(a.outputTokens(), s.maxOutputTokens());
    long prefill = prefillPerToken * prompt;
    long lastToken = prefill + (long) (output - 1) * decode;
    long deadline = a.requestClass().deadline().toNanos();
    long leaves = Math.min(deadline, a.cancelAfterNanos());
    if (leaves > lastToken) {
      return new ServedOnArrivalCost(Ending.COMPLETED, prompt + output);
    }
    long generated = leaves < prefill ? 0 : Math.min(output, 1 + (leaves - prefill) / decode);
    return new ServedOnArrivalCost(
        a.cancelAfterNanos() < deadline ? Ending.CANCELLED : Ending.DEADLINE, prompt + generated);
  }

  private static long exponentialNanos(SplittableRandom random, double rate) {
    return (long) (-Math.log(1 - random.nextDouble()) / rate * 1e9);
  }

  private static <T> T pick(
      SplittableRandom random, List<T> items, ToDoubleFunction<T> share, double shareSum) {
    double x = random.nextDouble() * shareSum;
    for (T item : items) {
      x -= share.applyAsDouble(item);
      if (x < 0) {
        return item;
      }
    }
    return items.get(items.size() - 1);
  }

  private static int uniform(SplittableRandom random, int lo, int hi) {
    return lo + random.nextInt(hi - lo + 1);
  }

  static byte[] body(int promptTokens, int outputTokens, int maxTokens) {
    // " the" is one BPE token of 4 bytes, so the upstream's bytes/4 and Sluice's tokenizer agree
    // roughly on the prompt size.
    StringBuilder b = new StringBuilder(promptTokens * 4 + 128);
    b.append("{\"model\":\"sim\",\"stream\":true,\"max_tokens\":")
        .append(maxTokens)
        .append(",\"sim_output_tokens\":")
        .append(outputTokens)
        .append(",\"messages\":[{\"role\":\"user\",\"content\":\"");
    b.append(" the".repeat(Math.max(1, promptTokens - 24)));
    b.append("\"}]}");
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private final class Run {
    private final Rig rig;
    private final Consumer<Progress> progress;
    private final Consumer<Outcome> outcomes;
    private final ScheduledThreadPoolExecutor timers =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "loadgen-timers");
              t.setDaemon(true);
              return t;
            });
    private final Map<String, Attempt> attemptsById = new ConcurrentHashMap<>();
    private final Set<Logical> open = ConcurrentHashMap.newKeySet();
    private final Map<String, Attempt> traced =
        TRACE_DIR == null ? null : new ConcurrentHashMap<>();
    private final AtomicLong orphanTokens = new AtomicLong();
    private final AtomicLong ids = new AtomicLong();
    private final AtomicInteger openLogical = new AtomicInteger();
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicLong admittedInFlight = new AtomicLong();
    private final int seconds;
    private final AtomicLongArray offeredPerSecond;
    private final AtomicLongArray admittedPerSecond;
    private final AtomicLongArray rejectedPerSecond;
    private final AtomicLongArray completedPerSecond;
    private final Histogram[] ttftPerSecond;
    private final long[] queuedAtSecond;
    private final int[] activeAtSecond;
    private final long promptSpent0;
    private final long completionSpent0;
    private long startNanos;

    // results (guarded by this)
    private long offered;
    private long attempts;
    private long completed;
    private long completedAfterRetry;
    private long deadlineMissed;
    private long deadlineMissedAfterFirstToken;
    private long cancelled;
    private long cancelledMidStream;
    private long refusalsWithRetryAfter;
    private long refusalsWithoutRetryAfter;
    private long retries;
    private long unsent;
    private long usefulTokens;
    private long admittedLogical;
    private long refusedBeforeUpstream;
    private long unservedBeforeUpstream;
    private long tokensOnMissedDeadlines;
    private long tokensOnHangUps;
    private long tokensOnHangUpsAfterWaiting;
    private final Map<String, Long> rejectedFinal = new TreeMap<>();
    private final Map<String, Long> rejectionsByReason = new TreeMap<>();
    private final Map<String, Long> errors = new TreeMap<>();
    private final Map<String, Histogram> ttftByClass = new LinkedHashMap<>();
    private final Map<String, Histogram> ttftFromArrivalByClass = new LinkedHashMap<>();
    private final Map<String, Histogram> refusalMicrosByReason = new LinkedHashMap<>();
    private final Map<String, long[]> byClass = new LinkedHashMap<>();
    private final Map<String, long[]> byTenant = new LinkedHashMap<>();
    private final long[][] byPhase;

    Run(Rig rig, Consumer<Progress> progress, Consumer<Outcome> outcomes) {
      this.rig = rig;
      this.progress = progress;
      this.outcomes = outcomes;
      long drainSeconds = workload.drain().toSeconds() + 2;
      this.seconds = (int) (Math.ceil(workload.duration().toNanos() / 1e9) + drainSeconds + 1);
      offeredPerSecond = new AtomicLongArray(seconds);
      admittedPerSecond = new AtomicLongArray(seconds);
      rejectedPerSecond = new AtomicLongArray(seconds);
      completedPerSecond = new AtomicLongArray(seconds);
      ttftPerSecond = new Histogram[seconds];
      queuedAtSecond = new long[seconds];
      activeAtSecond = new int[seconds];
      for (Workload.RequestClass c : workload.classes()) {
        ttftByClass.put(c.name(), new Histogram(3_600_000_000L, 3));
        ttftFromArrivalByClass.put(c.name(), new Histogram(3_600_000_000L, 3));
        byClass.put(c.name(), new long[2]);
      }
      for (Workload.Tenant t : workload.tenants()) {
        byTenant.put(t.name(), new long[2]);
      }
      byPhase = new long[workload.phases().size()][2];
      promptSpent0 = rig.upstream().promptTokensSpent();
      completionSpent0 = rig.upstream().completionTokensSpent();
      timers.setRemoveOnCancelPolicy(true);
    }

    RunReport execute() throws InterruptedException {
      rig.listener(
          new Rig.Listener() {
            @Override
            public void admitted(String requestId) {
              onUpstream(requestId);
            }

            @Override
            public void tokens(String requestId, long tokens) {
              Attempt a = attemptsById.get(requestId);
              if (a != null) {
                a.tokens.addAndGet(tokens);
              }
              Attempt t = traced == null ? null : traced.get(requestId);
              if (t != null) {
                t.tokensTotal.addAndGet(tokens);
              }
              if (a == null) {
                orphanTokens.addAndGet(tokens);
              }
            }
          });
      startNanos = System.nanoTime();
      var sampler =
          timers.scheduleAtFixedRate(
              this::sample, 1_000_000_000L, 1_000_000_000L, TimeUnit.NANOSECONDS);
      long meanActiveSum = 0;
      try {
        arrive();
        long drainUntil = System.nanoTime() + workload.drain().toNanos();
        while (openLogical.get() > 0 && System.nanoTime() - drainUntil < 0) {
          Thread.sleep(20);
        }
      } finally {
        sampler.cancel(false);
        timers.shutdownNow();
        rig.listener(Rig.Listener.NONE);
      }
      int arrivalSeconds = (int) Math.max(1, workload.duration().toSeconds());
      int samples = 0;
      synchronized (this) {
        for (int s = 0; s < Math.min(arrivalSeconds, seconds); s++) {
          if (s >= 1) {
            meanActiveSum += activeAtSecond[s];
            samples++;
          }
        }
      }
      long inFlightTokens = 0;
      for (Attempt a : attemptsById.values()) {
        inFlightTokens += a.tokens.get();
      }
      if (traced != null) {
        writeTrace();
      }
      long end = System.nanoTime();
      for (Logical l : open) {
        tell(l, "unfinished", "", end);
      }
      return report(samples == 0 ? 0 : (double) meanActiveSum / samples, inFlightTokens);
    }

    /** One CSV row per attempt (times in ms since the run started), for waste analysis. */
    private void writeTrace() {
      StringBuilder b =
          new StringBuilder(
              "id,class,tenant,attempt,voluntary,arrival,start,upstream,end,deadline,cancelAt,"
                  + "prompt,output,ending,ttfb,tokensAtEnd,tokensTotal\n");
      List<Attempt> all = new ArrayList<>(traced.values());
      all.sort((x, y) -> Long.compare(x.startNanos, y.startNanos));
      for (Attempt a : all) {
        Logical l = a.logical;
        b.append(a.id)
            .append(',')
            .append(l.requestClass.name())
            .append(',')
            .append(l.tenant.name())
            .append(',')
            .append(a.number)
            .append(',')
            .append(a.voluntary)
            .append(',')
            .append(ms(l.arrivalNanos))
            .append(',')
            .append(ms(a.startNanos))
            .append(',')
            .append(a.upstreamAtNanos < 0 ? "" : ms(a.upstreamAtNanos))
            .append(',')
            .append(a.endNanos < 0 ? "" : ms(a.endNanos))
            .append(',')
            .append(ms(l.deadlineNanos))
            .append(',')
            .append(l.cancelAtNanos == Long.MAX_VALUE ? "" : ms(l.cancelAtNanos))
            .append(',')
            .append(SimulatedLlmUpstream.promptTokens(l.body.length, rig.upstream().settings()))
            .append(',')
            .append(l.outputTokens)
            .append(',')
            .append(a.ending)
            .append(',')
            .append(a.ttfbNanos < 0 ? "" : a.ttfbNanos / 1_000_000)
            .append(',')
            .append(a.tokens.get())
            .append(',')
            .append(a.tokensTotal.get())
            .append('\n');
      }
      b.append("# orphanTokens=")
          .append(orphanTokens.get())
          .append(" promptSpent=")
          .append(rig.upstream().promptTokensSpent() - promptSpent0)
          .append(" completionSpent=")
          .append(rig.upstream().completionTokensSpent() - completionSpent0)
          .append('\n');
      try {
        java.nio.file.Path dir = java.nio.file.Path.of(TRACE_DIR);
        java.nio.file.Files.createDirectories(dir);
        java.nio.file.Files.writeString(
            dir.resolve(rig.name().replaceAll("[^A-Za-z0-9_.-]", "_") + ".csv"), b);
      } catch (java.io.IOException ex) {
        throw new java.io.UncheckedIOException(ex);
      }
    }

    private long ms(long nanos) {
      return (nanos - startNanos) / 1_000_000;
    }

    private void arrive() {
      for (Arrival a : arrivals(workload)) {
        long at = startNanos + a.atNanos();
        long wait = at - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        }
        newLogical(a, at);
      }
      long rest = startNanos + workload.duration().toNanos() - System.nanoTime();
      if (rest > 0) {
        LockSupport.parkNanos(rest);
      }
    }

    private void newLogical(Arrival a, long arrivalNanos) {
      Workload.RequestClass c = a.requestClass();
      Workload.Tenant t = a.tenant();
      Logical l =
          new Logical(
              c,
              t,
              a.phase(),
              arrivalNanos,
              arrivalNanos + c.deadline().toNanos(),
              a.cancelAfterNanos() == Long.MAX_VALUE
                  ? Long.MAX_VALUE
                  : arrivalNanos + a.cancelAfterNanos(),
              body(a.promptTokens(), a.outputTokens(), a.maxTokens()),
              a.outputTokens());
      l.hangsUpAnyway =
          a.cancelAfterNanos() != Long.MAX_VALUE
              && servedOnArrival(a, rig.upstream().settings()).ending() == Ending.CANCELLED;
      synchronized (this) {
        offered++;
        openLogical.incrementAndGet();
        open.add(l);
        byClass.get(c.name())[0]++;
        byTenant.get(t.name())[0]++;
        byPhase[a.phase()][0]++;
      }
      offeredPerSecond.incrementAndGet(second(arrivalNanos));
      send(l);
    }

    private void send(Logical l) {
      long now = System.nanoTime();
      long untilDeadline = l.deadlineNanos - now;
      long untilCancel = l.cancelAtNanos - now;
      if (untilDeadline <= 0 || untilCancel <= 0) {
        if (l.attempt == 0) {
          synchronized (this) {
            unsent++;
          }
        }
        finish(l, untilCancel <= 0 ? Ending.CANCELLED : Ending.DEADLINE, null, now);
        return;
      }
      boolean voluntary = untilCancel < untilDeadline;
      l.attemptsSent.incrementAndGet();
      String id = "lg-" + ids.incrementAndGet();
      Attempt a = new Attempt(l, id, now, voluntary);
      a.number = l.attempt;
      HttpRequest.Builder b =
          HttpRequest.post(l.requestClass.path(), "")
              .requestId(id)
              .header("x-sluice-timeout-ms", Long.toString(Math.max(1, untilDeadline / 1_000_000)))
              .routeGrpcInitialMetadata("x-sluice-tenant", l.tenant.name())
              .routeDisabled(!rig.admission())
              .cancelAfter(Duration.ofNanos(Math.min(untilDeadline, untilCancel)));
      b.bodyChunk(l.body);
      if (l.requestClass.sluiceClass() != null) {
        b.routeGrpcInitialMetadata("x-sluice-class", l.requestClass.sluiceClass());
      }
      rig.routeMetadata().forEach(b::routeGrpcInitialMetadata);
      attemptsById.put(id, a);
      if (traced != null) {
        traced.put(id, a);
      }
      inFlight.incrementAndGet();
      synchronized (this) {
        attempts++;
        if (l.attempt > 0) {
          retries++;
        }
      }
      rig.sendAsync(b.build()).whenComplete((r, e) -> onResult(a, r, e));
    }

    private void onUpstream(String id) {
      Attempt t = traced == null ? null : traced.get(id);
      if (t != null && t.upstreamAtNanos < 0) {
        t.upstreamAtNanos = System.nanoTime();
      }
      Attempt a = attemptsById.get(id);
      if (a == null) {
        return;
      }
      synchronized (a) {
        if (a.done || a.admitted) {
          return;
        }
        a.admitted = true;
        a.admittedAtNanos = System.nanoTime();
        // inside a's lock, so before onResult can mark it done and finish the logical request
        synchronized (this) {
          if (!a.logical.reachedUpstream) {
            a.logical.reachedUpstream = true;
            a.logical.upstreamAtNanos = System.nanoTime();
            admittedLogical++;
          }
        }
      }
      admittedInFlight.incrementAndGet();
      admittedPerSecond.incrementAndGet(second(System.nanoTime()));
    }

    private void onResult(Attempt a, HttpResult r, Throwable e) {
      long now = System.nanoTime();
      attemptsById.remove(a.id);
      boolean wasAdmitted;
      synchronized (a) {
        a.done = true;
        wasAdmitted = a.admitted;
      }
      inFlight.decrementAndGet();
      if (wasAdmitted) {
        admittedInFlight.decrementAndGet();
      }
      Logical l = a.logical;
      a.endNanos = now;
      a.ending = e != null || r == null ? "error" : r.outcome() + "/" + r.status();
      if (r != null) {
        r.timeToFirstByte().ifPresent(d -> a.ttfbNanos = d.toNanos());
        l.lastHeaders = r.headers();
        l.lastUpstreamRequest = r.upstreamRequest();
      }
      long admittedAt = a.admittedAtNanos;
      l.tries.add(
          new Try(
              ms(a.startNanos),
              wasAdmitted && admittedAt >= 0 ? ms(admittedAt) : -1,
              ms(now),
              r == null ? 0 : r.status()));
      if (e != null || r == null) {
        finish(l, Ending.ERROR, "exception " + (e == null ? "null" : e.getClass().getName()), now);
        return;
      }
      Optional<Duration> ttfb = r.timeToFirstByte();
      switch (r.outcome()) {
        case CLIENT_CANCELLED -> {
          boolean started = ttfb.isPresent() && r.status() == 200;
          synchronized (this) {
            if (a.voluntary && l.hangsUpAnyway) {
              tokensOnHangUps += a.tokens.get();
            } else if (a.voluntary) {
              tokensOnHangUpsAfterWaiting += a.tokens.get();
            } else {
              tokensOnMissedDeadlines += a.tokens.get();
            }
          }
          finish(l, a.voluntary ? Ending.CANCELLED : Ending.DEADLINE, started ? "mid" : null, now);
        }
        case UPSTREAM_RESPONSE, LOCAL_REPLY -> {
          int status = r.status();
          if (status == 200 && r.outcome() == HttpResult.Outcome.UPSTREAM_RESPONSE) {
            long attemptTtft = ttfb.orElse(r.total()).toNanos();
            long fromArrival = (a.startNanos - l.arrivalNanos) + attemptTtft;
            l.ttftNanos = fromArrival;
            recordTtft(l.requestClass.name(), a.startNanos + attemptTtft, attemptTtft, fromArrival);
            finish(l, Ending.COMPLETED, null, now);
          } else if (status == 429 || status == 503) {
            onRefused(a, r, now);
          } else {
            finish(l, Ending.ERROR, status + " " + r.responseCodeDetails(), now);
          }
        }
        case DOWNSTREAM_RESET -> finish(l, Ending.ERROR, "downstream_reset", now);
      }
    }

    private void onRefused(Attempt a, HttpResult r, long now) {
      Logical l = a.logical;
      String reason =
          r.header("x-sluice-reason")
              .orElse(
                  r.outcome() == HttpResult.Outcome.UPSTREAM_RESPONSE
                      ? "upstream_" + r.status()
                      : r.status() + "_" + r.responseCodeDetails());
      Optional<String> retryAfter = r.header("retry-after");
      rejectedPerSecond.incrementAndGet(second(now));
      long retryNanos = -1;
      synchronized (this) {
        rejectionsByReason.merge(reason, 1L, Long::sum);
        refusalMicrosByReason
            .computeIfAbsent(reason, k -> new Histogram(3_600_000_000L, 2))
            .recordValue(Math.max(0, Math.min(3_600_000_000L, r.total().toNanos() / 1000)));
        if (retryAfter.isPresent()) {
          refusalsWithRetryAfter++;
          try {
            retryNanos = Long.parseLong(retryAfter.get().trim()) * 1_000_000_000L;
          } catch (NumberFormatException ignored) {
            retryNanos = -1;
          }
        } else {
          refusalsWithoutRetryAfter++;
        }
      }
      if (retryNanos >= 0
          && l.attempt < workload.maxRetries()
          && l.deadlineNanos - (now + retryNanos) > 0
          && l.cancelAtNanos - (now + retryNanos) > 0) {
        l.attempt++; // counted as a retry when it is sent (a late timer may find it expired)
        timers.schedule(() -> send(l), retryNanos, TimeUnit.NANOSECONDS);
        return;
      }
      finish(l, Ending.REFUSED, reason, now);
    }

    private void finish(Logical l, Ending ending, String detail, long now) {
      synchronized (this) {
        if (!l.reachedUpstream) {
          if (ending == Ending.REFUSED) {
            refusedBeforeUpstream++;
          } else {
            unservedBeforeUpstream++;
          }
        }
        switch (ending) {
          case COMPLETED -> {
            completed++;
            if (l.attempt > 0) {
              completedAfterRetry++;
            }
            byClass.get(l.requestClass.name())[1]++;
            byTenant.get(l.tenant.name())[1]++;
            int completedIn = phaseAt(now);
            if (completedIn >= 0) {
              byPhase[completedIn][1]++;
            }
            usefulTokens +=
                SimulatedLlmUpstream.promptTokens(l.body.length, rig.upstream().settings())
                    + l.outputTokens;
          }
          case DEADLINE -> {
            deadlineMissed++;
            if (detail != null) {
              deadlineMissedAfterFirstToken++;
            }
          }
          case CANCELLED -> {
            cancelled++;
            if (detail != null) {
              cancelledMidStream++;
            }
          }
          case REFUSED -> rejectedFinal.merge(detail, 1L, Long::sum);
          case ERROR -> errors.merge(detail, 1L, Long::sum);
        }
        // Under the same lock as the count above: the report (synchronized) must never see a
        // request both counted as ended and still open.
        openLogical.decrementAndGet();
      }
      if (ending == Ending.COMPLETED) {
        completedPerSecond.incrementAndGet(second(now));
      }
      open.remove(l);
      tell(l, ending.name().toLowerCase(Locale.ROOT), detail == null ? "" : detail, now);
    }

    /** Tells {@link #outcomes} how {@code l} ended, once. */
    private void tell(Logical l, String ending, String detail, long now) {
      if (!l.told.compareAndSet(false, true)) {
        return;
      }
      long upstreamAt;
      synchronized (this) {
        upstreamAt = l.reachedUpstream ? ms(l.upstreamAtNanos) : -1;
      }
      outcomes.accept(
          new Outcome(
              l.requestClass.name(),
              l.tenant.name(),
              l.phaseIndex,
              ms(l.arrivalNanos),
              upstreamAt,
              ms(now),
              ending,
              detail,
              l.attemptsSent.get(),
              ending.equals("completed") ? l.ttftNanos / 1_000_000 : -1,
              l.outputTokens,
              l.lastHeaders,
              l.lastUpstreamRequest,
              List.copyOf(l.tries)));
    }

    private void recordTtft(String cls, long firstByteNanos, long ttftNanos, long fromArrival) {
      long micros = Math.max(1, ttftNanos / 1000);
      int s = second(firstByteNanos);
      synchronized (this) {
        ttftByClass.get(cls).recordValue(Math.min(micros, 3_600_000_000L));
        ttftFromArrivalByClass
            .get(cls)
            .recordValue(Math.min(Math.max(1, fromArrival / 1000), 3_600_000_000L));
        if (ttftPerSecond[s] == null) {
          ttftPerSecond[s] = new Histogram(3_600_000_000L, 2);
        }
        ttftPerSecond[s].recordValue(Math.min(micros, 3_600_000_000L));
      }
    }

    /** The arrival phase whose window contains {@code nanos}, or -1 (before or after them). */
    private int phaseAt(long nanos) {
      long at = startNanos;
      for (int p = 0; p < workload.phases().size(); p++) {
        long end = at + workload.phases().get(p).duration().toNanos();
        if (nanos - at >= 0 && nanos - end < 0) {
          return p;
        }
        at = end;
      }
      return -1;
    }

    private int second(long nanos) {
      long s = (nanos - startNanos) / 1_000_000_000L;
      return (int) Math.max(0, Math.min(seconds - 1, s));
    }

    private void sample() {
      int s = second(System.nanoTime()) - 1; // the second that just ended
      if (s < 0) {
        return;
      }
      long queued = Math.max(0, inFlight.get() - admittedInFlight.get());
      int active = rig.upstream().active();
      Progress p;
      synchronized (this) {
        queuedAtSecond[s] = queued;
        activeAtSecond[s] = active;
        p = progress(s + 1, active);
      }
      progress.accept(p);
    }

    /** The logical counts so far (under this run's lock, so they add up). */
    private Progress progress(int second, int active) {
      long refusedAttempts = 0;
      for (long n : rejectionsByReason.values()) {
        refusedAttempts += n;
      }
      return new Progress(
          second,
          offered,
          admittedLogical,
          refusedBeforeUpstream,
          unservedBeforeUpstream,
          offered - admittedLogical - refusedBeforeUpstream - unservedBeforeUpstream,
          completed,
          refusedAttempts,
          active);
    }

    private synchronized RunReport report(double meanActive, long inFlightTokens) {
      List<RunReport.Second> timeline = new ArrayList<>();
      int last = 0;
      for (int s = 0; s < seconds; s++) {
        if (offeredPerSecond.get(s) + admittedPerSecond.get(s) + completedPerSecond.get(s) > 0
            || queuedAtSecond[s] > 0) {
          last = s;
        }
      }
      for (int s = 0; s <= last; s++) {
        Histogram h = ttftPerSecond[s];
        timeline.add(
            new RunReport.Second(
                s,
                offeredPerSecond.get(s),
                admittedPerSecond.get(s),
                rejectedPerSecond.get(s),
                completedPerSecond.get(s),
                queuedAtSecond[s],
                activeAtSecond[s],
                h == null ? Double.NaN : h.getValueAtPercentile(50) / 1000.0,
                h == null ? Double.NaN : h.getValueAtPercentile(95) / 1000.0));
      }
      List<RunReport.PhaseRow> phases = new ArrayList<>();
      for (int p = 0; p < workload.phases().size(); p++) {
        Workload.Phase ph = workload.phases().get(p);
        phases.add(
            new RunReport.PhaseRow(
                ph.label(),
                ph.duration().toNanos() / 1e9,
                ph.ratePerSecond(),
                byPhase[p][0],
                byPhase[p][1]));
      }
      Map<String, RunReport.Split> classes = new LinkedHashMap<>();
      byClass.forEach((k, v) -> classes.put(k, new RunReport.Split(v[0], v[1])));
      Map<String, RunReport.Split> tenants = new LinkedHashMap<>();
      byTenant.forEach((k, v) -> tenants.put(k, new RunReport.Split(v[0], v[1])));
      return new RunReport(
          rig.name(),
          workload.duration().toNanos() / 1e9,
          offered,
          attempts,
          completed,
          completedAfterRetry,
          deadlineMissed,
          deadlineMissedAfterFirstToken,
          cancelled,
          cancelledMidStream,
          Map.copyOf(rejectedFinal),
          Map.copyOf(rejectionsByReason),
          refusalsWithRetryAfter,
          refusalsWithoutRetryAfter,
          retries,
          unsent,
          Map.copyOf(errors),
          openLogical.get(),
          Map.copyOf(ttftByClass),
          Map.copyOf(ttftFromArrivalByClass),
          classes,
          tenants,
          phases,
          timeline,
          rig.upstream().promptTokensSpent() - promptSpent0,
          rig.upstream().completionTokensSpent() - completionSpent0,
          usefulTokens,
          inFlightTokens,
          tokensOnMissedDeadlines,
          tokensOnHangUps,
          tokensOnHangUpsAfterWaiting,
          orphanTokens.get(),
          meanActive,
          rig.upstream().settings().batchSlots(),
          Map.copyOf(refusalMicrosByReason));
    }
  }

  private enum Ending {
    COMPLETED,
    DEADLINE,
    CANCELLED,
    REFUSED,
    ERROR
  }

  private static final class Logical {
    final Workload.RequestClass requestClass;
    final Workload.Tenant tenant;
    final int phaseIndex;
    final long arrivalNanos;
    final long deadlineNanos;
    final long cancelAtNanos;
    final byte[] body;
    final int outputTokens;
    volatile int attempt;
    volatile long ttftNanos;
    final AtomicInteger attemptsSent = new AtomicInteger();
    final AtomicBoolean told = new AtomicBoolean();
    final List<Try> tries = new CopyOnWriteArrayList<>();
    volatile HttpHeaders lastHeaders = HttpHeaders.of();
    volatile Optional<UpstreamRequest> lastUpstreamRequest = Optional.empty();
    boolean reachedUpstream; // guarded by the run
    long upstreamAtNanos; // guarded by the run

    /** Served on arrival at full speed, its client would still hang up before the answer ends. */
    boolean hangsUpAnyway;

    Logical(
        Workload.RequestClass requestClass,
        Workload.Tenant tenant,
        int phaseIndex,
        long arrivalNanos,
        long deadlineNanos,
        long cancelAtNanos,
        byte[] body,
        int outputTokens) {
      this.requestClass = requestClass;
      this.tenant = tenant;
      this.phaseIndex = phaseIndex;
      this.arrivalNanos = arrivalNanos;
      this.deadlineNanos = deadlineNanos;
      this.cancelAtNanos = cancelAtNanos;
      this.body = body;
      this.outputTokens = outputTokens;
    }
  }

  private static final class Attempt {
    final Logical logical;
    final String id;
    final long startNanos;
    final boolean voluntary;
    final AtomicLong tokens = new AtomicLong();
    final AtomicLong tokensTotal = new AtomicLong(); // including tokens after the result (trace)
    volatile int number;
    volatile long upstreamAtNanos = -1;
    volatile long admittedAtNanos = -1;
    volatile long endNanos = -1;
    volatile String ending = "open";
    volatile long ttfbNanos = -1;
    boolean admitted;
    boolean done;

    Attempt(Logical logical, String id, long startNanos, boolean voluntary) {
      this.logical = logical;
      this.id = id;
      this.startNanos = startNanos;
      this.voluntary = voluntary;
    }
  }
}
