package io.sluice.extproc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.util.MutableHandlerRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.routing.RequestResolver;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryStore;
import io.sluice.testing.RawBytes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided: whole ext_proc streams through the real handler and the real gRPC call path (an
 * in-process server with Sluice's own request marshaller, so a malformed frame fails where it fails
 * in production), on a fake ticker and clock.
 *
 * <p>Each input is a program for up to three concurrent streams (see {@link Program}): open a
 * stream with some initial metadata; send one of Envoy's messages built from a template
 * (request_headers in every body mode, with or without end_of_stream and content-length; request
 * bodies small, large or not JSON; response headers; JSON and SSE response bodies with usage;
 * trailers), a template frame damaged (a byte flipped, truncated, or garbage appended), a raw
 * frame, or an empty one; half-close; cancel (Envoy's reset); advance the fake time (queue expiry
 * fires as the timer would: at each held request's expiry); shut the server down.
 *
 * <p>After every step and at the end the harness checks what Envoy relies on:
 *
 * <ul>
 *   <li>every answer parses and answers the oldest outstanding message, with that message's phase
 *       (or an ImmediateResponse, or a hold: override_message_timeout alone, once per message);
 *   <li>every message is answered within its timeout on the fake clock (Envoy's message_timeout,
 *       200 ms; after a hold, the hold's override) unless the stream was closed non-OK first;
 *   <li>no answer after the stream closed; never an OK close before the client half-closed;
 *   <li>as in Envoy, an ImmediateResponse completes the processing: what the stream sends after it
 *       (or had pipelined before it) needs no answer, and answers after it are ignored — but
 *       whatever it leaves behind still counts below.
 * </ul>
 *
 * <p>and once the input is over (time advanced past every hold, then every still-open stream
 * cancelled as Envoy's reset does): no stream left open in the service, and in every pool no
 * permit, work, tenant count or queue entry left behind.
 *
 * <p>Seeds: {@code ExtProcStreamFuzzTestInputs/wholeStreams/} (written by {@link FuzzSeedWriter});
 * docs/testing.md.
 */
class ExtProcStreamFuzzTest {
  static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      limits: {maxBodyBytes: 4KiB}
      pools:
        gpu: {capacity: 1500, maxMessageTimeout: 2s, holdMargin: 200ms, defaultServiceTime: 1s,
              retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
        cpu: {capacity: 300, retryAfter: {min: 1s, max: 10s}}
      classes:
        interactive: {rank: 0, reservedShare: 0.6, borrow: true, maxQueueWait: 1s, deadline: 30s,
                      defaultOutputTokens: 100, maxOutputTokens: 1000}
        batch: {rank: 1, reservedShare: 0.2, borrow: true, maxQueueWait: 500ms,
                defaultOutputTokens: 50, maxOutputTokens: 400}
      tiers:
        free: {weight: 1, maxInFlight: 2, rpm: 30, inputTpm: 3000, outputTpm: 3000}
        pro: {weight: 4}
      tenants: {anonymousTier: free, unknown: admit, unknownTier: free,
                known: {acme: {tier: pro}, b: {tier: free}}}
      signals:
        tenant: [{metadata: x-sluice-tenant}, {header: x-tenant-id}]
        class: [{metadata: x-sluice-class}]
        pool: [{metadata: x-sluice-pool}]
        maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        - {name: completions, match: {pathPrefix: /v1/completions}, class: batch, format: openai-completions}
      unmatched: {action: reject}
      responses: {decisionHeader: true, estimateHeader: true}
      decisionLog: {enabled: true, level: debug}
      """;

  /** Envoy's default message_timeout. */
  static final long MESSAGE_TIMEOUT_NANOS = Duration.ofMillis(200).toNanos();

  /** {@code -Dsluice.fuzz.trace=true}: print every input's steps (what a seed does). */
  static final boolean TRACE = Boolean.getBoolean("sluice.fuzz.trace");

  static final int STREAMS = 3;
  static final int MAX_STEPS = 96;

  static final MethodDescriptor.Marshaller<byte[]> RAW = RawBytes.MARSHALLER;

  /** The ext_proc method as Envoy's client sees it: bytes in, bytes out. */
  static final MethodDescriptor<byte[], byte[]> PROCESS_RAW =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
          .setFullMethodName(ExtProcService.PROCESS.getFullMethodName())
          .setRequestMarshaller(RAW)
          .setResponseMarshaller(RAW)
          .build();

  private static SluiceConfig config;
  private static RequestResolver resolver;
  private static TokenEstimator estimator;
  private static DecisionLog decisionLog;
  private static QueueTimer timer;
  private static SimpleMeterRegistry registry;
  private static MutableHandlerRegistry services;
  private static Server server;
  private static ManagedChannel channel;

  @BeforeAll
  static void start() throws IOException {
    config = ConfigLoader.parse(POLICY);
    resolver = new RequestResolver(config);
    estimator =
        new TokenEstimator(EstimatorSettings.defaults(), new TokenCountCache(1 << 20, 32), null);
    decisionLog = new DecisionLog(config.decisionLog(), null, null);
    timer = new QueueTimer();
    registry = new SimpleMeterRegistry();
    services = new MutableHandlerRegistry();
    String name = "extproc-fuzz-" + System.nanoTime();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .fallbackHandlerRegistry(services)
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  @AfterAll
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    timer.close();
  }

  @FuzzTest(maxDuration = "5m")
  void wholeStreams(byte[] input) {
    new Run(new Program(input)).run();
  }

  /** Reads an input as a sequence of small numbers; past its end every number is 0. */
  static final class Program {
    private final byte[] bytes;
    private int pos;

    Program(byte[] bytes) {
      this.bytes = bytes;
    }

    boolean done() {
      return pos >= bytes.length;
    }

    int next() {
      return pos < bytes.length ? bytes[pos++] & 0xff : 0;
    }

    byte[] take(int n) {
      int k = Math.max(0, Math.min(n, bytes.length - pos));
      byte[] out = Arrays.copyOfRange(bytes, pos, pos + k);
      pos += k;
      return out;
    }
  }

  // --- the op codes (low nibble of an op byte; the high nibble picks the stream)

  static final int OPEN = 0;
  static final int REQUEST_HEADERS = 1;
  static final int REQUEST_BODY = 2;
  static final int REQUEST_TRAILERS = 3;
  static final int RESPONSE_HEADERS = 4;
  static final int RESPONSE_BODY = 5;
  static final int RESPONSE_TRAILERS = 6;
  static final int RAW_FRAME = 7;
  static final int DAMAGED_FRAME = 8;
  static final int HALF_CLOSE = 9;
  static final int CANCEL = 10;
  static final int ADVANCE = 11;
  static final int SHUTDOWN = 12;
  static final int EMPTY_FRAME = 13;
  static final int OPS = 14;

  /** One input's world: a fresh controller, quotas and service on the shared server. */
  static final class Run {
    final Program program;
    final FakeTicker ticker = new FakeTicker();
    final MutableClock clock = new MutableClock(Instant.ofEpochSecond(1_700_000_000L));
    final AdmissionController controller = Controllers.forPolicy(config, () -> 0.5);
    final AtomicBoolean draining = new AtomicBoolean();
    // permits held for a predicted tail (body mode NONE): their timers run on the real clock
    final io.sluice.core.session.TailHolds tails = new io.sluice.core.session.TailHolds();
    final ExtProcService service;
    final Stream[] streams = new Stream[STREAMS];
    final List<Stream> all = new ArrayList<>();
    final StringBuilder trace = new StringBuilder();

    Run(Program program) {
      this.program = program;
      AdmissionMetrics metrics = new AdmissionMetrics(registry, ticker::nanos);
      TenantQuotas quotas =
          new TenantQuotas(
              new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
              "sluice_",
              TenantQuotas.FailureMode.OPEN);
      AdmissionRuntime rt =
          new AdmissionRuntime(
              config,
              resolver,
              controller,
              estimator,
              metrics,
              decisionLog,
              ticker,
              clock,
              timer,
              quotas,
              new ExtProcTables(resolver),
              io.sluice.core.session.Sessions.builder(
                      controller,
                      quotas,
                      estimator,
                      ticker,
                      clock,
                      timer,
                      new io.sluice.observability.SessionRecorder(
                          metrics, decisionLog, java.util.List.of()))
                  .defaultInputTokens(config.estimation().defaultInputTokens())
                  .tails(tails)
                  .build());

      service = ExtProcService.create(() -> rt, draining::get);
      services.addService(service.definition()); // replaces the previous input's service
    }

    void run() {
      try {
        for (int step = 0; step < MAX_STEPS && !program.done(); step++) {
          step(program.next());
          for (Stream s : all) {
            s.check();
          }
        }
        // Envoy's side of the end: every hold runs out, then the streams still open are reset.
        advance(Duration.ofSeconds(5).toNanos());
        for (Stream s : all) {
          s.check();
          s.assertAnswered();
        }
        for (Stream s : all) {
          s.cancel();
        }
        assertNothingLeft();
        if (TRACE) {
          System.err.println("ok:\n" + trace);
        }
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + "\nsteps:\n" + trace, e);
      } finally {
        for (Stream s : all) {
          s.cancel();
        }
      }
    }

    void step(int op) {
      int which = (op >>> 4) % STREAMS;
      int kind = (op & 0x0f) % OPS;
      Stream s = streams[which];
      if (kind == OPEN || s == null) {
        if (s != null) {
          s.cancel(); // the previous request on this slot is over
        }
        streams[which] = s = new Stream(which, program.next());
        all.add(s);
        log("open #%d %s", which, s.label);
        if (kind == OPEN) {
          return;
        }
      }
      switch (kind) {
        case REQUEST_HEADERS -> s.send(requestHeaders(program.next()));
        case REQUEST_BODY -> s.send(requestBody(program.next()));
        case REQUEST_TRAILERS ->
            s.send(
                ProcessingRequest.newBuilder()
                    .setRequestTrailers(HttpTrailers.getDefaultInstance())
                    .build()
                    .toByteArray());
        case RESPONSE_HEADERS -> s.send(responseHeaders(program.next()));
        case RESPONSE_BODY -> s.send(responseBody(program.next()));
        case RESPONSE_TRAILERS ->
            s.send(
                ProcessingRequest.newBuilder()
                    .setResponseTrailers(HttpTrailers.getDefaultInstance())
                    .build()
                    .toByteArray());
        case RAW_FRAME -> s.send(program.take(program.next()));
        case DAMAGED_FRAME -> s.send(damaged());
        case HALF_CLOSE -> s.halfClose();
        case CANCEL -> s.cancel();
        case ADVANCE -> advance((program.next() << 8 | program.next()) * 1_000_000L);
        case SHUTDOWN -> shutdown();
        case EMPTY_FRAME -> s.send(new byte[0]);
        default -> throw new IllegalStateException("op " + kind);
      }
    }

    /** A template frame with one fault: a byte replaced, the frame cut, or bytes appended. */
    byte[] damaged() {
      int template = program.next();
      int variant = program.next();
      byte[] frame =
          switch (template % 4) {
            case 0 -> requestHeaders(variant);
            case 1 -> requestBody(variant);
            case 2 -> responseHeaders(variant);
            default -> responseBody(variant);
          };
      int how = program.next();
      int at = frame.length == 0 ? 0 : program.next() % frame.length;
      return switch (how % 3) {
        case 0 -> {
          byte[] c = frame.clone();
          if (c.length > 0) {
            c[at] = (byte) program.next();
          }
          yield c;
        }
        case 1 -> Arrays.copyOf(frame, at);
        default -> {
          byte[] tail = program.take(1 + program.next() % 8);
          byte[] c = Arrays.copyOf(frame, frame.length + tail.length);
          System.arraycopy(tail, 0, c, frame.length, tail.length);
          yield c;
        }
      };
    }

    /** Moves the fake time on, firing each pool's queue expiry when it falls due. */
    void advance(long nanos) {
      long target = ticker.nanos() + nanos;
      log("advance %d ms", nanos / 1_000_000L);
      while (true) {
        long next = Long.MAX_VALUE;
        for (PoolState p : controller.pools()) {
          OptionalLong e = p.nextExpiryNanos();
          if (e.isPresent() && e.getAsLong() - target < 0 && e.getAsLong() - next < 0) {
            next = e.getAsLong();
          }
        }
        if (next == Long.MAX_VALUE) {
          break;
        }
        // the stream's timer fires 1 ms after the expiry, at the earliest
        long fire = next + 1_000_000L;
        if (fire - target > 0) {
          break;
        }
        moveTo(Math.max(fire, ticker.nanos()));
        for (PoolState p : controller.pools()) {
          controller.expireDue(p.policy().name(), ticker.nanos());
        }
        for (Stream s : all) {
          s.check();
        }
      }
      moveTo(target);
      for (Stream s : all) {
        s.check();
      }
    }

    void moveTo(long t) {
      long d = t - ticker.nanos();
      if (d > 0) {
        ticker.advanceNanos(d);
        clock.advance(Duration.ofNanos(d));
      }
    }

    /** The server's shutdown after its grace period: queued refused, streams ended non-OK. */
    void shutdown() {
      log("shutdown");
      draining.set(true);
      controller.refuseAllQueued(ticker.nanos());
      service.shutdownStreams();
      tails.releaseAll(); // as the server does after the streams
    }

    /** What must be left once every stream has ended: nothing. */
    void assertNothingLeft() {
      // a permit held for a predicted tail outlives its stream until its timer (real time here) or
      // the shutdown: end them as the shutdown would; a leaked one is still counted below
      tails.releaseAll();
      List<String> left = new ArrayList<>();
      if (service.liveStreams() != 0) {
        left.add(service.liveStreams() + " streams still open in the service");
      }
      for (PoolState p : controller.pools()) {
        PoolState.Snapshot snap = p.snapshot(ticker.nanos());
        if (snap.requestsInFlight() != 0 || snap.workInFlight() != 0) {
          left.add(
              "pool "
                  + snap.pool()
                  + ": "
                  + snap.requestsInFlight()
                  + " permits ("
                  + snap.workInFlight()
                  + " work units) in flight");
        }
        if (snap.tenantsInFlight() != 0) {
          left.add("pool " + snap.pool() + ": " + snap.tenantsInFlight() + " tenants counted");
        }
        for (PoolState.QueueSnapshot q : p.queues(ticker.nanos(), 0)) {
          if (q.depth() != 0) {
            left.add("pool " + snap.pool() + ": " + q.depth() + " queued in " + q.className());
          }
        }
        if (p.nextExpiryNanos().isPresent()) {
          left.add("pool " + snap.pool() + ": a queue expiry still pending");
        }
      }
      check(left.isEmpty(), "left behind after every stream ended: " + left);
    }

    void log(String format, Object... args) {
      trace.append("  ").append(String.format(format, args)).append('\n');
    }

    /** One ext_proc stream as Envoy drives it, with what Envoy expects of the answers. */
    final class Stream extends ClientCall.Listener<byte[]> {
      final int slot;
      final String label;
      final ClientCall<byte[], byte[]> call;
      final ArrayDeque<Pending> outstanding = new ArrayDeque<>();
      final List<String> violations = new ArrayList<>();
      boolean halfClosed;
      boolean cancelled;
      boolean immediate; // an ImmediateResponse came: for Envoy, processing is complete
      Status closedWith;

      Stream(int slot, int variant) {
        this.slot = slot;
        Metadata md = new Metadata();
        StringBuilder l = new StringBuilder();
        String tenant = pick(variant, new String[] {null, "acme", "b", "c"});
        String cls = pick(variant >>> 2, new String[] {null, "interactive", "batch", "bogus"});
        String pool = pick(variant >>> 4, new String[] {null, "gpu", "cpu", "nope"});
        String hold = pick(variant >>> 6, new String[] {null, "0", "1000", "x"});
        put(md, "x-sluice-tenant", tenant, l);
        put(md, "x-sluice-class", cls, l);
        put(md, "x-sluice-pool", pool, l);
        put(md, "x-sluice-max-message-timeout-ms", hold, l);
        this.label = l.toString();
        call = channel.newCall(PROCESS_RAW, CallOptions.DEFAULT);
        call.start(this, md);
        call.request(Integer.MAX_VALUE);
      }

      private void put(Metadata md, String key, String value, StringBuilder l) {
        if (value != null) {
          md.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), value);
          l.append(key).append('=').append(value).append(' ');
        }
      }

      synchronized boolean open() {
        return closedWith == null && !cancelled;
      }

      void send(byte[] frame) {
        RequestCase expected = null;
        boolean parses = true;
        try {
          expected = ProcessingRequest.parseFrom(frame).getRequestCase();
        } catch (InvalidProtocolBufferException e) {
          parses = false;
        }
        synchronized (this) {
          if (!open() || halfClosed) {
            return; // Envoy sends nothing on a stream it has closed
          }
          log(
              "#%d send %s (%d bytes%s)",
              slot,
              parses ? expected : "malformed",
              frame.length,
              frame.length <= 48 ? ": " + java.util.HexFormat.of().formatHex(frame) : "");
          if (!immediate) { // after an ImmediateResponse Envoy expects (and reads) no answer
            outstanding.add(
                new Pending(
                    parses ? expected : null, ticker.nanos() + MESSAGE_TIMEOUT_NANOS, parses));
          }
        }
        call.sendMessage(frame);
      }

      void halfClose() {
        synchronized (this) {
          if (!open() || halfClosed) {
            return;
          }
          halfClosed = true;
        }
        log("#%d half-close", slot);
        call.halfClose();
      }

      void cancel() {
        synchronized (this) {
          if (!open()) {
            return;
          }
          cancelled = true;
        }
        log("#%d cancel", slot);
        call.cancel("envoy reset", null);
      }

      @Override
      public synchronized void onMessage(byte[] bytes) {
        ProcessingResponse r;
        try {
          r = ProcessingResponse.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
          violations.add("an answer that does not parse: " + e.getMessage());
          return;
        }
        if (closedWith != null) {
          violations.add("an answer after the stream closed " + closedWith);
          return;
        }
        Pending p = outstanding.peekFirst();
        String what = r.getResponseCase() + (r.hasOverrideMessageTimeout() ? "+override" : "");
        log("#%d answer %s", slot, what);
        if (immediate) {
          return; // Envoy ignores what follows an ImmediateResponse
        }
        if (p == null) {
          violations.add("an answer (" + what + ") to no message");
          return;
        }
        if (ticker.nanos() - p.deadlineNanos > 0) {
          violations.add(
              "the answer to "
                  + p.kind
                  + " came "
                  + (ticker.nanos() - p.deadlineNanos) / 1_000_000L
                  + " ms after its timeout");
        }
        if (r.hasOverrideMessageTimeout()
            && r.getResponseCase() == ProcessingResponse.ResponseCase.RESPONSE_NOT_SET) {
          if (p.held) {
            violations.add("a second override for one " + p.kind + " message");
          }
          com.google.protobuf.Duration d = r.getOverrideMessageTimeout();
          long nanos = d.getSeconds() * 1_000_000_000L + d.getNanos();
          if (nanos <= 0) {
            violations.add("an override of " + nanos + " ns");
          }
          p.held = true;
          p.deadlineNanos = ticker.nanos() + nanos;
          return;
        }
        outstanding.removeFirst();
        if (r.getResponseCase() == ProcessingResponse.ResponseCase.IMMEDIATE_RESPONSE) {
          // Envoy marks processing complete: it needs no answer to chunks it pipelined before
          immediate = true;
          outstanding.clear();
        }
        if (!p.parses || p.kind == RequestCase.REQUEST_NOT_SET) {
          violations.add("an answer (" + what + ") to a message that carries none");
          return;
        }
        String expected = p.kind.name();
        String got = r.getResponseCase().name();
        if (!got.equals(expected)
            && r.getResponseCase() != ProcessingResponse.ResponseCase.IMMEDIATE_RESPONSE) {
          violations.add("a " + got + " answer to " + expected);
        }
      }

      @Override
      public synchronized void onClose(Status status, Metadata trailers) {
        log("#%d closed %s", slot, status.getCode() + " " + status.getDescription());
        if (status.isOk() && !halfClosed) {
          violations.add(
              "closed OK before Envoy half-closed (Envoy then lets the request through)"
                  + (outstanding.isEmpty() ? "" : "; " + outstanding.size() + " unanswered"));
        }
        closedWith = status;
        if (!status.isOk() || halfClosed) {
          outstanding.clear(); // non-OK: Envoy applies failure_mode_allow to what is pending
        }
      }

      /** Throws on what went wrong so far; a message past its timeout counts once time passed. */
      synchronized void check() {
        if (open()) {
          Pending p = outstanding.peekFirst();
          if (p != null && ticker.nanos() - p.deadlineNanos > 0) {
            violations.add(
                "no answer to "
                    + (p.parses ? p.kind : "a malformed frame")
                    + (p.held ? " (held)" : "")
                    + " "
                    + (ticker.nanos() - p.deadlineNanos) / 1_000_000L
                    + " ms after its timeout, and the stream is still open");
            outstanding.removeFirst();
          }
        }
        if (!violations.isEmpty()) {
          throw new AssertionError("stream #" + slot + " (" + label + "): " + violations);
        }
      }

      synchronized void assertAnswered() {
        if (open() && !outstanding.isEmpty()) {
          throw new AssertionError(
              "stream #"
                  + slot
                  + " ("
                  + label
                  + "): "
                  + outstanding.size()
                  + " messages unanswered");
        }
      }
    }
  }

  static final class Pending {
    final RequestCase kind;
    final boolean parses;
    long deadlineNanos;
    boolean held;

    Pending(RequestCase kind, long deadlineNanos, boolean parses) {
      this.kind = kind;
      this.deadlineNanos = deadlineNanos;
      this.parses = parses;
    }
  }

  static void check(boolean ok, String message) {
    if (!ok) {
      throw new AssertionError(message);
    }
  }

  static <T> T pick(int v, T[] options) {
    return options[v & (options.length - 1)];
  }

  // --- templates: the messages Envoy sends

  static final String[] PATHS = {
    "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/healthz"
  };

  /** request_headers: path, body modes, end_of_stream and content-length from {@code v}. */
  static byte[] requestHeaders(int v) {
    HeaderMap.Builder h = HeaderMap.newBuilder();
    h.addHeaders(raw(":method", "POST"));
    h.addHeaders(raw(":path", PATHS[v & 3]));
    h.addHeaders(raw(":authority", "llm.example.com"));
    h.addHeaders(raw("content-type", "application/json"));
    String length = pick(v >>> 5, new String[] {null, "180", "999999", "12x"});
    if (length != null) {
      h.addHeaders(raw("content-length", length));
    }
    if ((v & 0x80) != 0) {
      h.addHeaders(raw("x-tenant-id", "b"));
    }
    ProcessingRequest.Builder b =
        ProcessingRequest.newBuilder()
            .setRequestHeaders(
                HttpHeaders.newBuilder().setHeaders(h).setEndOfStream((v & 0x10) != 0));
    switch ((v >>> 2) & 3) {
      case 1 -> b.setProtocolConfig(modes(BodySendMode.BUFFERED, BodySendMode.STREAMED));
      case 2 -> b.setProtocolConfig(modes(BodySendMode.STREAMED, BodySendMode.STREAMED));
      case 3 -> b.setProtocolConfig(modes(BodySendMode.NONE, BodySendMode.NONE));
      default -> {} // Envoy < 1.34: no protocol_config
    }
    return b.build().toByteArray();
  }

  private static ProtocolConfiguration modes(BodySendMode request, BodySendMode response) {
    return ProtocolConfiguration.newBuilder()
        .setRequestBodyMode(request)
        .setResponseBodyMode(response)
        .build();
  }

  /** request_body: a chat body with one of four output caps, end_of_stream, or a large body. */
  static byte[] requestBody(int v) {
    String maxTokens = pick(v, new String[] {"10", "300", "5000", "-1"});
    String content = (v & 0x10) != 0 ? "x".repeat(5000) : "hello ".repeat(1 + ((v >>> 5) & 7) * 20);
    String body =
        (v & 0x08) != 0
            ? "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content
            : "{\"model\":\"gpt-4o\",\"max_tokens\":"
                + maxTokens
                + ",\"messages\":[{\"role\":\"user\",\"content\":\""
                + content
                + "\"}]}";
    return ProcessingRequest.newBuilder()
        .setRequestBody(
            HttpBody.newBuilder()
                .setBody(ByteString.copyFromUtf8(body))
                .setEndOfStream((v & 0x04) == 0))
        .build()
        .toByteArray();
  }

  /** response_headers: status, content type and end_of_stream. */
  static byte[] responseHeaders(int v) {
    String status = pick(v, new String[] {"200", "500", "429", "abc"});
    String type = (v & 4) != 0 ? "text/event-stream" : "application/json";
    return ProcessingRequest.newBuilder()
        .setResponseHeaders(
            HttpHeaders.newBuilder()
                .setHeaders(
                    HeaderMap.newBuilder()
                        .addHeaders(raw(":status", status))
                        .addHeaders(raw("content-type", type)))
                .setEndOfStream((v & 8) != 0))
        .build()
        .toByteArray();
  }

  /** response_body: a JSON or SSE chunk with usage, or a piece of one; end_of_stream. */
  static byte[] responseBody(int v) {
    String chunk =
        pick(
            v,
            new String[] {
              "{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34}}",
              "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
              "data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n",
              "{\"usage\":{\"input_tokens\":"
            });
    return ProcessingRequest.newBuilder()
        .setResponseBody(
            HttpBody.newBuilder()
                .setBody(ByteString.copyFrom(chunk, StandardCharsets.UTF_8))
                .setEndOfStream((v & 4) != 0))
        .build()
        .toByteArray();
  }

  private static HeaderValue raw(String k, String v) {
    return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
  }
}
