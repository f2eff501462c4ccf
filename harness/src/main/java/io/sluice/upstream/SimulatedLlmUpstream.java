package io.sluice.upstream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A simulated OpenAI-style chat-completions provider, usable in-process as an {@link Upstream} or
 * over loopback HTTP ({@link #serve(int)}).
 *
 * <p>Model: {@code batchSlots} (K) requests decode at full speed; beyond K the provider shares its
 * capacity, so every prefill/decode step takes {@code active / K} times longer (processor sharing,
 * evaluated at each step). Time to first token = prefill ({@code prefillPerInputToken} × prompt
 * tokens, stretched) gives the first token; each further token takes {@code decodePerOutputToken}
 * (stretched). Prompt tokens are {@code ceil(body bytes / charsPerToken)}; completion tokens are
 * {@code max_tokens} (or {@code max_completion_tokens}) capped at {@code maxOutputTokens}, else
 * {@code defaultOutputTokens}; a body field {@code sim_output_tokens} (a simulation hint) ends the
 * answer earlier. Zero durations make it instant (for tests). {@link #throttle(int, Duration)}
 * makes it answer 429 or 503 with {@code retry-after} like a throttling provider; {@link
 * #concurrencyCeiling(int, int, Duration)} does so only for requests above a number in flight, like
 * a provider with an unstated concurrency limit.
 */
public final class SimulatedLlmUpstream implements Upstream, AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Provider settings.
   *
   * @param batchSlots K, requests served at full speed (≥ 1)
   * @param prefillPerInputToken prefill time per prompt token
   * @param decodePerOutputToken decode time per completion token
   * @param defaultOutputTokens completion tokens when the request sets no max_tokens
   * @param maxOutputTokens upper bound for completion tokens
   * @param charsPerToken bytes of request body per prompt token (≥ 1)
   */
  public record Settings(
      int batchSlots,
      Duration prefillPerInputToken,
      Duration decodePerOutputToken,
      int defaultOutputTokens,
      int maxOutputTokens,
      int charsPerToken) {
    public Settings {
      if (batchSlots < 1) {
        throw new IllegalArgumentException("batchSlots: " + batchSlots + " (expected: >= 1)");
      }
      if (prefillPerInputToken.isNegative() || decodePerOutputToken.isNegative()) {
        throw new IllegalArgumentException(
            "prefillPerInputToken/decodePerOutputToken: negative (expected: >= 0)");
      }
      if (defaultOutputTokens < 1 || maxOutputTokens < 1) {
        throw new IllegalArgumentException(
            "defaultOutputTokens/maxOutputTokens: "
                + defaultOutputTokens
                + "/"
                + maxOutputTokens
                + " (expected: >= 1)");
      }
      if (charsPerToken < 1) {
        throw new IllegalArgumentException("charsPerToken: " + charsPerToken + " (expected: >= 1)");
      }
    }

    /** Instant responses, 8 slots, 16 completion tokens by default. */
    public static Settings instant() {
      return new Settings(8, Duration.ZERO, Duration.ZERO, 16, 4096, 4);
    }

    /** Roughly a small hosted model: 0.2 ms/prompt token, 20 ms/completion token. */
    public static Settings realistic(int batchSlots) {
      return new Settings(
          batchSlots, Duration.ofNanos(200_000), Duration.ofMillis(20), 64, 4096, 4);
    }
  }

  private record Throttle(int status, Duration retryAfter) {}

  private record Ceiling(int maxInFlight, Throttle answer) {}

  private final Settings settings;
  private final ScheduledExecutorService scheduler;
  private final AtomicInteger active = new AtomicInteger();
  private final Object concurrencyLock = new Object();
  private int peakActive;
  private long activeNanosIntegral;
  private long concurrencySince = System.nanoTime();
  private long lastChange = concurrencySince;
  private final AtomicLong served = new AtomicLong();
  private final AtomicLong promptTokensSpent = new AtomicLong();
  private final AtomicLong completionTokensSpent = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private volatile @Nullable Throttle throttle;
  private volatile @Nullable Ceiling ceiling;

  /** Generations accepted and not yet ended or cancelled (what the ceiling counts). */
  private final AtomicInteger inFlight = new AtomicInteger();

  private final AtomicLong throttledAnswers = new AtomicLong();

  private @Nullable LoopbackHttpServer httpServer;

  /** With a scheduler of its own (one daemon thread) for the token steps. */
  public static SimulatedLlmUpstream create(Settings settings) {
    return new SimulatedLlmUpstream(settings, defaultScheduler());
  }

  /**
   * With the token steps run by {@code scheduler} (tests pass a virtual-time one, so decode times
   * are checked on a fake clock); {@link #close()} shuts it down.
   */
  public SimulatedLlmUpstream(Settings settings, ScheduledExecutorService scheduler) {
    this.settings = settings;
    this.scheduler = scheduler;
  }

  private static ScheduledExecutorService defaultScheduler() {
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "simulated-llm");
              t.setDaemon(true);
              return t;
            });
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  /** From now on answer every request with {@code status} (429 or 503) and retry-after. */
  public void throttle(int status, Duration retryAfter) {
    if (status != 429 && status != 503) {
      throw new IllegalArgumentException("status: " + status + " (expected: 429 or 503)");
    }
    this.throttle = new Throttle(status, retryAfter);
  }

  public void stopThrottling() {
    this.throttle = null;
  }

  /**
   * From now on answer {@code status} (429 or 503) with {@code retry-after} to any request that
   * arrives while {@code maxInFlight} generations are already in flight; the others are served as
   * usual (the batch-slot model still applies to them). Models a provider's concurrency limit that
   * it does not publish. In flight: from {@link #send} accepting the request until its last token
   * or its cancellation (so an in-process caller must subscribe to or cancel every body it gets, as
   * {@link Upstream} callers do). {@link #inFlight()} reads the count. {@code maxInFlight} 0 or
   * less removes the ceiling.
   */
  public void concurrencyCeiling(int maxInFlight, int status, Duration retryAfter) {
    if (maxInFlight <= 0) { // 0 or less: no ceiling
      this.ceiling = null;
      return;
    }
    if (status != 429 && status != 503) {
      throw new IllegalArgumentException("status: " + status + " (expected: 429 or 503)");
    }
    this.ceiling = new Ceiling(maxInFlight, new Throttle(status, retryAfter));
  }

  /** Removes the {@link #concurrencyCeiling(int, int, Duration)}. */
  public void noConcurrencyCeiling() {
    this.ceiling = null;
  }

  /** Generations accepted and not yet ended or cancelled (what the concurrency ceiling counts). */
  public int inFlight() {
    return inFlight.get();
  }

  /**
   * Requests answered 429 or 503 so far by {@link #throttle} or {@link #concurrencyCeiling} (never
   * started).
   */
  public long throttledAnswers() {
    return throttledAnswers.get();
  }

  /** Requests currently generating (prefill or decode). */
  public int active() {
    return active.get();
  }

  /** The most generations that ran at once since the start or {@link #resetConcurrency()}. */
  public int peakActive() {
    synchronized (concurrencyLock) {
      return peakActive;
    }
  }

  /**
   * The time-weighted mean of {@link #active()} since the start or {@link #resetConcurrency()}
   * (exact: every start and end of a generation is counted).
   */
  public double meanActive() {
    synchronized (concurrencyLock) {
      long now = System.nanoTime();
      long integral = activeNanosIntegral + (long) active.get() * (now - lastChange);
      long span = now - concurrencySince;
      return span <= 0 ? active.get() : (double) integral / span;
    }
  }

  /** Starts {@link #peakActive()} and {@link #meanActive()} again from now (peak: the current). */
  public void resetConcurrency() {
    synchronized (concurrencyLock) {
      long now = System.nanoTime();
      concurrencySince = now;
      lastChange = now;
      activeNanosIntegral = 0;
      peakActive = active.get();
    }
  }

  private void activeChanged(int delta) {
    synchronized (concurrencyLock) {
      long now = System.nanoTime();
      int before = active.get();
      activeNanosIntegral += (long) before * (now - lastChange);
      lastChange = now;
      int after = active.addAndGet(delta);
      peakActive = Math.max(peakActive, after);
    }
  }

  /** Requests answered with 200 so far. */
  public long served() {
    return served.get();
  }

  /**
   * Prompt tokens of every generation that started (prefill work spent), including generations that
   * were later cancelled.
   */
  public long promptTokensSpent() {
    return promptTokensSpent.get();
  }

  /** Completion tokens generated so far, including those of cancelled generations. */
  public long completionTokensSpent() {
    return completionTokensSpent.get();
  }

  /** The settings this upstream runs with. */
  public Settings settings() {
    return settings;
  }

  /**
   * Prompt tokens this upstream charges for a request body of {@code bodyBytes} bytes (the same
   * rule {@link #send} uses).
   */
  public static int promptTokens(int bodyBytes, Settings settings) {
    return Math.max(1, ceilDiv(bodyBytes, settings.charsPerToken()));
  }

  @Override
  public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
    Throttle t = throttle;
    if (t != null) {
      throttledAnswers.incrementAndGet();
      return CompletableFuture.completedFuture(
          OpenAiResponses.throttled(t.status(), t.retryAfter()));
    }
    JsonNode body;
    try {
      body = request.body().length == 0 ? JSON.createObjectNode() : JSON.readTree(request.body());
    } catch (IOException e) {
      return CompletableFuture.completedFuture(
          OpenAiResponses.error(
              400, "invalid_request_error", "request body is not JSON", Map.of()));
    }
    String model = body.path("model").asText("simulated");
    boolean stream = body.path("stream").asBoolean(false);
    int promptTokens = Math.max(1, ceilDiv(request.body().length, settings.charsPerToken()));
    int completionTokens = settings.defaultOutputTokens();
    JsonNode max =
        body.has("max_completion_tokens")
            ? body.get("max_completion_tokens")
            : body.get("max_tokens");
    if (max != null && max.canConvertToInt() && max.asInt() > 0) {
      completionTokens = Math.min(max.asInt(), settings.maxOutputTokens());
    }
    // Simulation hint: the answer ends before max_tokens (as real answers usually do).
    JsonNode actual = body.get("sim_output_tokens");
    if (actual != null && actual.canConvertToInt() && actual.asInt() > 0) {
      completionTokens = Math.min(completionTokens, actual.asInt());
    }
    Ceiling c = ceiling;
    int running = inFlight.incrementAndGet();
    if (c != null && running > c.maxInFlight()) {
      inFlight.decrementAndGet();
      throttledAnswers.incrementAndGet();
      return CompletableFuture.completedFuture(
          OpenAiResponses.throttled(c.answer().status(), c.answer().retryAfter()));
    }
    Generation generation =
        new Generation(
            "chatcmpl-" + ids.incrementAndGet(), model, stream, promptTokens, completionTokens);
    if (stream) {
      return CompletableFuture.completedFuture(
          new UpstreamResponse(
              200,
              HttpHeaders.of("content-type", "text/event-stream", "cache-control", "no-cache"),
              generation));
    }
    CompletableFuture<UpstreamResponse> done = new CompletableFuture<>();
    generation.subscribe(
        (data, eos) ->
            done.complete(
                UpstreamResponse.of(
                    200,
                    HttpHeaders.of(
                        "content-type",
                        "application/json",
                        "content-length",
                        Integer.toString(data.length)),
                    List.of(data))));
    return done;
  }

  /** One generation; for non-streaming requests the sink gets the whole JSON once at the end. */
  private final class Generation implements ResponseBody {
    private final String id;
    private final String model;
    private final boolean stream;
    private final int promptTokens;
    private final int completionTokens;
    private volatile boolean cancelled;
    private int emitted;
    private @Nullable Sink sink;
    private final AtomicInteger released = new AtomicInteger();

    Generation(String id, String model, boolean stream, int promptTokens, int completionTokens) {
      this.id = id;
      this.model = model;
      this.stream = stream;
      this.promptTokens = promptTokens;
      this.completionTokens = completionTokens;
    }

    @Override
    public Runnable subscribe(Sink sink) {
      this.sink = sink;
      activeChanged(1);
      promptTokensSpent.addAndGet(promptTokens);
      step(settings.prefillPerInputToken().toNanos() * promptTokens);
      return () -> {
        cancelled = true;
        release();
      };
    }

    private void release() {
      if (released.compareAndSet(0, 1)) {
        activeChanged(-1);
        inFlight.decrementAndGet();
      }
    }

    /** Schedules the next token after {@code baseNanos}, stretched by the current sharing. */
    private void step(long baseNanos) {
      long nanos = stretch(baseNanos);
      if (nanos <= 0) {
        scheduler.execute(this::emitToken);
      } else {
        scheduler.schedule(this::emitToken, nanos, TimeUnit.NANOSECONDS);
      }
    }

    private long stretch(long baseNanos) {
      int k = settings.batchSlots();
      int a = active.get();
      return a <= k ? baseNanos : (long) (baseNanos * ((double) a / k));
    }

    private void emitToken() {
      if (cancelled) {
        return;
      }
      emitted++;
      completionTokensSpent.incrementAndGet();
      boolean last = emitted >= completionTokens;
      if (stream) {
        Objects.requireNonNull(sink, "sink")
            .onData(OpenAiResponses.sse(chunk(OpenAiResponses.token(emitted), null)), false);
        if (last) {
          release();
          served.incrementAndGet();
          ObjectNode finish = chunk(null, "length");
          ObjectNode usage = JSON.createObjectNode();
          usage.put("id", id).put("object", "chat.completion.chunk").put("model", model);
          usage.putArray("choices");
          usage.set("usage", usage());
          byte[] tail =
              OpenAiResponses.concat(
                  OpenAiResponses.sse(finish),
                  OpenAiResponses.sse(usage),
                  "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
          sink.onData(tail, true);
          return;
        }
      } else if (last) {
        release();
        served.incrementAndGet();
        Objects.requireNonNull(sink, "sink").onData(completion(), true);
        return;
      }
      step(settings.decodePerOutputToken().toNanos());
    }

    private ObjectNode chunk(@Nullable String content, @Nullable String finishReason) {
      ObjectNode c = JSON.createObjectNode();
      c.put("id", id).put("object", "chat.completion.chunk").put("created", 0).put("model", model);
      ObjectNode choice = c.putArray("choices").addObject();
      choice.put("index", 0);
      ObjectNode delta = choice.putObject("delta");
      if (content != null) {
        delta.put("content", content);
      }
      if (finishReason == null) {
        choice.putNull("finish_reason");
      } else {
        choice.put("finish_reason", finishReason);
      }
      return c;
    }

    private byte[] completion() {
      ObjectNode c = JSON.createObjectNode();
      c.put("id", id).put("object", "chat.completion").put("created", 0).put("model", model);
      ArrayNode choices = c.putArray("choices");
      ObjectNode choice = choices.addObject();
      choice.put("index", 0);
      StringBuilder text = new StringBuilder();
      for (int i = 1; i <= completionTokens; i++) {
        text.append(OpenAiResponses.token(i));
      }
      choice.putObject("message").put("role", "assistant").put("content", text.toString());
      choice.put("finish_reason", "length");
      c.set("usage", usage());
      return c.toString().getBytes(StandardCharsets.UTF_8);
    }

    private ObjectNode usage() {
      ObjectNode u = JSON.createObjectNode();
      u.put("prompt_tokens", promptTokens);
      u.put("completion_tokens", completionTokens);
      u.put("total_tokens", promptTokens + completionTokens);
      return u;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // loopback HTTP

  /**
   * Serves {@code POST /v1/chat/completions} (any path, really) on 127.0.0.1; {@code port} 0 picks
   * a free port. Returns the bound port. Stopped by {@link #close()}.
   */
  public synchronized int serve(int port) throws IOException {
    if (httpServer != null) {
      throw new IllegalStateException("already serving on port " + httpServer.port());
    }
    httpServer = LoopbackHttpServer.start(port, this);
    return httpServer.port();
  }

  @Override
  public synchronized void close() {
    if (httpServer != null) {
      httpServer.stop();
      httpServer = null;
    }
    scheduler.shutdownNow();
  }

  private static int ceilDiv(int a, int b) {
    return (a + b - 1) / b;
  }
}
