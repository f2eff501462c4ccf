package io.sluice.calibrate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Runs one step: {@code concurrency} closed-loop workers send streaming requests ({@code "stream":
 * true}), each its next as soon as its previous one ended, until the step's request budget is spent
 * or its time is up. Each worker's first request is not measured: the workers start together, and
 * that burst is a transient (every prefill at once), not the steady state the step is after. The
 * measured requests come from a {@linkplain Mix#deck deck} of the budget's size in the mix's
 * proportions, the same for every step. While the last measured requests finish, the workers that
 * have none left keep the concurrency up with unmeasured requests (none is sent after the last
 * measured one ended; those in flight are let finish, so the next step starts on an idle endpoint:
 * a cancelled generation may hold its slot at the server a while), so that every measured request
 * ran under the step's load: no draining tail with fewer requests in flight, and no bias toward the
 * requests that end first. The requests still in flight when the step time has passed twice, or the
 * run's time limit, are cancelled and counted unfinished.
 *
 * <p>Measures, per request: time to the first {@code data:} chunk with content (TTFT), time to the
 * end of the stream, output tokens ({@code usage.completion_tokens} when the endpoint reports it,
 * else the content chunks), prompt tokens ({@code usage.prompt_tokens}). Throughput follows from
 * Little's law: with {@code concurrency} requests in flight all along, the endpoint completes
 * {@code concurrency / mean time per request} requests a second; ok requests per second are the ok
 * requests' share of it ({@code concurrency × ok / sum of the ended requests' times}).
 *
 * <p>A step stops sending once more than 1 % of its budget (and at least 3 requests) failed: it is
 * past a limit already, and a provider that refuses should not be hammered (no unmeasured requests
 * then, nor after one of them failed).
 */
final class StepRunner implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * What to send.
   *
   * @param target URL and headers
   * @param model the {@code model} field ({@code null}: not sent)
   * @param mix request shapes
   * @param requestsPerStep request budget of a step
   * @param stepTime how long a step sends; its requests in flight then get as long again
   * @param seed of the mix draws
   */
  record Settings(
      Target target,
      @Nullable String model,
      Mix mix,
      int requestsPerStep,
      Duration stepTime,
      long seed) {}

  /** The answer to a single request (the warm-up). */
  record Probe(boolean ok, String status, String detail, double ttftMillis) {}

  private final Settings settings;
  private final HttpClient client;
  private final ExecutorService executor;
  private final ScheduledExecutorService timer;
  private final Random random;
  private final boolean completionsApi;
  private volatile boolean includeUsage = true;
  private long nonce;

  StepRunner(Settings settings) {
    this.settings = settings;
    this.executor = Executors.newCachedThreadPool(daemon("calibrate-http"));
    this.timer = Executors.newSingleThreadScheduledExecutor(daemon("calibrate-timer"));
    boolean https = settings.target().uri().getScheme().equalsIgnoreCase("https");
    this.client =
        HttpClient.newBuilder()
            .version(https ? HttpClient.Version.HTTP_2 : HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .followRedirects(HttpClient.Redirect.NEVER)
            .executor(executor)
            .build();
    this.random = new Random(settings.seed());
    this.nonce = settings.seed() * 1_000_003L;
    String path =
        settings.target().uri().getPath() == null ? "" : settings.target().uri().getPath();
    this.completionsApi = path.endsWith("/completions") && !path.endsWith("/chat/completions");
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * One request of the mix's first entry, not counted in any step: checks that the endpoint
   * answers, and warms the connection. If it is refused with 400 while {@code stream_options} was
   * sent, that option is dropped for the run and the request repeated once (endpoints that do not
   * know it).
   */
  Probe probe(Duration timeout) throws InterruptedException {
    Probe p = probeOnce(timeout);
    if (!p.ok() && p.status().equals("400") && includeUsage) {
      includeUsage = false;
      Probe again = probeOnce(timeout);
      if (again.ok()) {
        return again;
      }
      includeUsage = true;
    }
    return p;
  }

  private Probe probeOnce(Duration timeout) throws InterruptedException {
    Step step = new Step(1, 1, System.nanoTime() + timeout.toNanos(), false);
    step.start();
    step.await(System.nanoTime() + timeout.toNanos());
    StreamedCall c;
    synchronized (step) {
      c = step.calls.isEmpty() ? null : step.calls.get(0);
    }
    if (c == null || c.kind().equals("unfinished")) {
      return new Probe(
          false, "timeout", "no answer within " + timeout.toSeconds() + " s", Double.NaN);
    }
    boolean ok = c.kind().equals("ok");
    return new Probe(
        ok,
        ok ? String.valueOf(c.status) : c.kind(),
        c.errorText.toString(),
        c.firstContent < 0 ? Double.NaN : (c.firstContent - c.start) / 1e6);
  }

  /** Runs a step; returns early (what it measured so far) when {@code runDeadlineNanos} passes. */
  StepResult run(int concurrency, long runDeadlineNanos) throws InterruptedException {
    Step step = new Step(concurrency, settings.requestsPerStep(), runDeadlineNanos, true);
    step.start();
    step.await(runDeadlineNanos);
    return step.result();
  }

  @Override
  public void close() {
    timer.shutdownNow();
    executor.shutdownNow();
  }

  /** The request of {@code e}, a new prompt each time. */
  private synchronized HttpRequest request(Mix.Entry e) {
    long n = ++nonce;
    ObjectNode body = JSON.createObjectNode();
    if (settings.model() != null) {
      body.put("model", settings.model());
    }
    String text = Mix.filler(e.promptTokens(), n);
    if (completionsApi) {
      body.put("prompt", text);
    } else {
      ObjectNode m = body.putArray("messages").addObject();
      m.put("role", "user").put("content", text);
    }
    body.put("max_tokens", e.maxTokens());
    body.put("stream", true);
    if (includeUsage) {
      body.putObject("stream_options").put("include_usage", true);
    }
    HttpRequest.Builder b =
        HttpRequest.newBuilder(settings.target().uri())
            .timeout(settings.stepTime().multipliedBy(2))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .POST(HttpRequest.BodyPublishers.ofString(body.toString(), StandardCharsets.UTF_8));
    for (Target.Header h : settings.target().headers()) {
      b.header(h.name(), h.value());
    }
    return b.build();
  }

  /** One step's state: workers, budget, the requests sent. */
  private final class Step {
    final int concurrency;
    final int budget;
    final long runDeadline;
    final long startNanos = System.nanoTime();
    final List<StreamedCall> calls = new ArrayList<>();
    final Set<StreamedCall> inFlight = ConcurrentHashMap.newKeySet();
    final CountDownLatch workersDone;
    final List<Mix.Entry> deck;
    int issued; // guarded by this
    int ended; // guarded by this: measured requests that ended
    int failed; // guarded by this
    boolean stopped; // guarded by this: no more measured requests
    boolean paddingFailed; // guarded by this
    int padding; // guarded by this: unmeasured requests sent (they cycle through the deck)
    final int warmUps;
    int warmUpsSent; // guarded by this
    boolean errorStop; // guarded by this: more than 1 % of the budget failed
    @Nullable ScheduledFuture<?> stopTimer;

    Step(int concurrency, int budget, long runDeadline, boolean warmUp) {
      this.warmUps = warmUp ? concurrency : 0;
      this.concurrency = concurrency;
      this.budget = budget;
      this.runDeadline = runDeadline;
      this.workersDone = new CountDownLatch(concurrency);
      synchronized (StepRunner.this) {
        this.deck = settings.mix().deck(budget, random);
      }
    }

    void start() {
      long stepEnd = Math.min(startNanos + settings.stepTime().toNanos(), runDeadline);
      stopTimer = timer.schedule(this::stopIssuing, stepEnd - startNanos, TimeUnit.NANOSECONDS);
      for (int i = 0; i < concurrency; i++) {
        executor.execute(this::next);
      }
    }

    synchronized void stopIssuing() {
      stopped = true;
    }

    /**
     * Sends this worker's next request: a measured one while the budget and the step time last;
     * then, while measured requests are still in flight, an unmeasured one that keeps the
     * concurrency at the step's (so the last measured requests run under the same load as the
     * first); else the worker ends.
     */
    void next() {
      StreamedCall c;
      Mix.Entry entry;
      synchronized (this) {
        boolean inTime = System.nanoTime() < runDeadline;
        if (!stopped && inTime && warmUpsSent < warmUps) {
          entry = deck.get(warmUpsSent++ % deck.size());
          c = new StreamedCall(false);
        } else if (!stopped && issued < budget && inTime) {
          entry = deck.get(issued);
          issued++;
          c = new StreamedCall(true);
          calls.add(c);
        } else if (inTime && ended < issued && !paddingFailed && !errorStop) {
          entry = deck.get(padding++ % deck.size());
          c = new StreamedCall(false);
        } else {
          entry = null;
          c = null;
        }
        if (c != null) {
          inFlight.add(c);
        }
      }
      if (c == null || entry == null) {
        workersDone.countDown();
        return;
      }
      StreamedCall call = c;
      try {
        CompletableFuture<HttpResponse<Void>> f =
            client.sendAsync(
                request(entry),
                info -> {
                  call.onHeaders(info);
                  return HttpResponse.BodySubscribers.fromLineSubscriber(call);
                });
        call.future = f;
        if (call.cancelled) {
          f.cancel(true);
        }
        var unused = f.whenCompleteAsync((r, ex) -> ended(call, ex), executor);
      } catch (RuntimeException e) { // e.g. a request the client refuses to build
        ended(call, e);
      }
    }

    void ended(StreamedCall c, @Nullable Throwable ex) {
      String kind = c.end(ex);
      boolean failure = !kind.equals("ok") && !kind.equals("unfinished");
      synchronized (this) {
        inFlight.remove(c);
        if (c.measured) {
          ended++;
          if (failure) {
            failed++;
            if (failed >= 3 && failed > budget / 100) {
              stopped = true;
              errorStop = true;
            }
          }
        } else if (failure) {
          paddingFailed = true; // e.g. 429s: do not keep a refusing endpoint busy for nothing
        }
      }
      next();
    }

    /** Waits for the workers; past the drain time or the run's deadline, cancels what is left. */
    void await(long hardDeadline) throws InterruptedException {
      long drainEnd =
          Math.min(
              startNanos + 2 * settings.stepTime().toNanos(), Math.min(hardDeadline, runDeadline));
      long wait = drainEnd - System.nanoTime();
      if (wait > 0 && workersDone.await(wait, TimeUnit.NANOSECONDS)) {
        finish();
        return;
      }
      List<StreamedCall> left;
      synchronized (this) {
        stopped = true;
        left = new ArrayList<>(inFlight);
      }
      left.forEach(StreamedCall::cancel);
      workersDone.await(5, TimeUnit.SECONDS);
      finish();
    }

    private void finish() {
      ScheduledFuture<?> t = stopTimer;
      if (t != null) {
        t.cancel(false);
      }
    }

    StepResult result() {
      List<StreamedCall> done;
      int sent;
      synchronized (this) {
        done = new ArrayList<>(calls);
        sent = issued;
      }
      Map<String, Integer> errors = new TreeMap<>();
      int ok = 0;
      int unfinished = 0;
      List<Double> ttft = new ArrayList<>();
      double okLatencySum = 0;
      double busySeconds = 0;
      double promptSum = 0;
      int promptCount = 0;
      double outputSum = 0;
      for (StreamedCall c : done) {
        String kind = c.kind();
        if (kind.equals("unfinished")) {
          unfinished++;
          continue;
        }
        double seconds = (c.endNanos - c.start) / 1e9;
        busySeconds += seconds;
        if (kind.equals("ok")) {
          ok++;
          if (c.firstContent >= 0) {
            ttft.add((c.firstContent - c.start) / 1e6);
          }
          okLatencySum += seconds * 1000;
          outputSum += c.outputTokens();
          if (c.usagePrompt >= 0) {
            promptSum += c.usagePrompt;
            promptCount++;
          }
        } else {
          errors.merge(kind, 1, Integer::sum);
        }
      }
      // Little's law: `concurrency` requests were in flight all along (padding kept them up), so
      // the endpoint completed concurrency / (mean time per request) requests per second; the ok
      // ones are their share of that worker time.
      double rps = busySeconds <= 0 ? 0 : concurrency * ok / busySeconds;
      double tps = busySeconds <= 0 ? 0 : concurrency * outputSum / busySeconds;
      double[] t = ttft.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      return new StepResult(
          concurrency,
          sent,
          ok,
          new TreeMap<>(errors),
          unfinished,
          rps,
          tps,
          percentile(t, 50),
          percentile(t, 95),
          ok == 0 ? Double.NaN : okLatencySum / ok,
          promptCount == 0 ? Double.NaN : promptSum / promptCount,
          ok == 0 ? Double.NaN : outputSum / ok,
          (System.nanoTime() - startNanos) / 1_000_000);
    }
  }

  /** Nearest rank; NaN for no values. */
  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(p / 100 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  static String describe(Probe p) {
    return p.status() + (p.detail().isBlank() ? "" : ": " + p.detail().strip());
  }
}
