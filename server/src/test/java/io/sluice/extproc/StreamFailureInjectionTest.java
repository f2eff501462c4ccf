package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 13, "audit every exception exit": a failure is injected at every step a stream takes
 * (through {@link StreamFaults}: resolving, the quota store and its future, estimating, deciding,
 * admitting, refusing, encoding an answer, metrics, the decision log, releasing, a waiter callback
 * from another stream or the timer thread, cancel, half-close), at its first, second and third
 * occurrence, in every scenario. After each run: no permit in flight (released, and never twice:
 * in-flight never below zero and releases never more than the permits granted), no queue entry, no
 * live stream, every stream ended exactly once, never OK while a message was unanswered, non-OK
 * wherever the fault fired, and the failure counted.
 */
class StreamFailureInjectionTest {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      limits: {maxBodyBytes: 4KiB}
      pools:
        gpu: {capacity: 100000, maxRequests: 1, maxMessageTimeout: 5s, holdMargin: 100ms,
              defaultServiceTime: 1s, retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 100ms, deadline: 30s,
                      queue: {tenantShare: 1.0}, defaultOutputTokens: 10, maxOutputTokens: 100}
      tiers:
        metered: {weight: 1, rpm: 1000000, inputTpm: 100000000, outputTpm: 100000000}
      tenants: {anonymousTier: metered, unknownTier: metered}
      signals: {tenant: [{metadata: x-sluice-tenant}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      decisionLog: {enabled: true, level: trace, sampleRate: 1.0, alwaysLogRejects: true}
      """;

  private static SluiceServer server;

  @BeforeAll
  static void start() throws Exception {
    server = SluiceServer.start(ConfigLoader.parse(CONFIG));
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  /** Throws at the {@code nth} occurrence of {@code step} (QUOTA: fails that future instead). */
  static final class Armed implements StreamFaults {
    final Step step;
    final int nth;
    final AtomicInteger seen = new AtomicInteger();
    volatile boolean fired;
    volatile boolean firedInClientReset; // the client had already reset that stream

    Armed(Step step, int nth) {
      this.step = step;
      this.nth = nth;
    }

    @Override
    public void at(Step s) {
      if (s == step && step != Step.QUOTA && seen.incrementAndGet() == nth) {
        fired = true;
        firedInClientReset = RESETTING.get();
        throw new IllegalStateException("injected at " + s);
      }
    }

    @Override
    public <T> CompletionStage<T> quota(CompletionStage<T> stage) {
      if (step == Step.QUOTA && seen.incrementAndGet() == nth) {
        fired = true;
        return CompletableFuture.failedFuture(new IllegalStateException("injected store failure"));
      }
      return stage;
    }
  }

  /** The server side of one call: records answers and how the call ended. */
  static final class Recording extends ServerCallStreamObserver<Answer> {
    final List<ProcessingResponse> answers = new ArrayList<>();
    volatile int requests; // messages the test sent that need an answer
    volatile int answered;
    volatile Status closedWith;
    final AtomicInteger closes = new AtomicInteger();
    volatile boolean okBeforeAnswer;
    private Runnable onCancel = () -> {};

    @Override
    public synchronized void onNext(Answer value) {
      ProcessingResponse r = value.message();
      answers.add(r);
      if (!r.hasOverrideMessageTimeout()) {
        answered++;
      }
    }

    @Override
    public void onError(Throwable t) {
      closes.incrementAndGet();
      closedWith = Status.fromThrowable(t);
    }

    @Override
    public void onCompleted() {
      closes.incrementAndGet();
      if (answered < requests) {
        okBeforeAnswer = true;
      }
      closedWith = Status.OK;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public void setOnCancelHandler(Runnable r) {
      onCancel = r;
    }

    void cancel() {
      onCancel.run();
    }

    @Override
    public void setCompression(String compression) {}

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setOnReadyHandler(Runnable onReadyHandler) {}

    @Override
    public void request(int count) {}

    @Override
    public void setMessageCompression(boolean enable) {}

    @Override
    public void disableAutoInboundFlowControl() {}
  }

  /** One stream driven as Envoy would. */
  static final class Drive {
    final Recording call = new Recording();
    final StreamObserver<Inbound> in;

    Drive(ExtProcService service) {
      in = service.open(call, new Metadata());
    }

    void send(ProcessingRequest r) {
      if (call.closes.get() > 0) {
        return; // the stream already ended (a fault fired): Envoy sends nothing more
      }
      call.requests++;
      in.onNext(
          InboundMarshaller.INSTANCE.parse(new java.io.ByteArrayInputStream(r.toByteArray())));
    }

    void cancel() {
      RESETTING.set(true); // the cancel handler runs on this thread
      try {
        call.cancel();
      } finally {
        RESETTING.set(false);
      }
    }

    void halfClose() {
      in.onCompleted();
    }
  }

  interface Scenario {
    void run(ExtProcService s) throws Exception;
  }

  static final String CHAT =
      "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  static final List<Drive> DRIVES = new ArrayList<>();
  static final ThreadLocal<Boolean> RESETTING = ThreadLocal.withInitial(() -> false);

  static Drive open(ExtProcService s) {
    Drive d = new Drive(s);
    DRIVES.add(d);
    return d;
  }

  static Scenario buffered() {
    return s -> {
      Drive a = open(s);
      a.send(
          headers(
              ExtProcServerTestBase.chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
      a.send(body(CHAT));
      a.send(responseHeaders(200, "application/json", false));
      a.send(responseBody("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}", true));
      a.cancel();
    };
  }

  static Scenario headersOnlyHalfClose() {
    return s -> {
      Drive a = open(s);
      a.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      a.send(responseHeaders(200, "application/json", true));
      a.halfClose();
    };
  }

  static Scenario rejectedTooLarge() {
    return s -> {
      Drive a = open(s);
      a.send(
          headers(
              ExtProcServerTestBase.chat("content-length", "999999"),
              false,
              BodySendMode.BUFFERED,
              BodySendMode.STREAMED));
      a.cancel();
    };
  }

  /** b is held behind a; a's release (on a's thread) admits b through b's waiter callback. */
  static Scenario queuedThenAdmitted() {
    return s -> {
      Drive a = open(s);
      a.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      Drive b = open(s);
      b.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      a.send(responseHeaders(200, "application/json", true));
      a.cancel();
      b.send(responseHeaders(200, "application/json", true));
      b.cancel();
    };
  }

  /** b is held behind a until the queue timer (its own thread) refuses it. */
  static Scenario queuedThenExpired() {
    return s -> {
      Drive a = open(s);
      a.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      Drive b = open(s);
      b.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      await()
          .pollInterval(Duration.ofMillis(5))
          .atMost(Duration.ofSeconds(5))
          .until(() -> b.call.answered >= b.call.requests || b.call.closes.get() > 0);
      b.cancel();
      a.cancel();
    };
  }

  /** b is held, then half-closes: never OK before its answer. */
  static Scenario queuedThenHalfClosed() {
    return s -> {
      Drive a = open(s);
      a.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      Drive b = open(s);
      b.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
      b.halfClose();
      a.cancel();
      b.cancel();
    };
  }

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    String[] names = {
      "buffered",
      "headersOnlyHalfClose",
      "rejectedTooLarge",
      "queuedThenAdmitted",
      "queuedThenExpired",
      "queuedThenHalfClosed"
    };
    for (String n : names) {
      for (StreamFaults.Step step : StreamFaults.Step.values()) {
        for (int nth = 1; nth <= 3; nth++) {
          out.add(Arguments.of(n, step, nth));
        }
      }
    }
    return out.stream();
  }

  static Scenario scenario(String name) {
    return switch (name) {
      case "buffered" -> buffered();
      case "headersOnlyHalfClose" -> headersOnlyHalfClose();
      case "rejectedTooLarge" -> rejectedTooLarge();
      case "queuedThenAdmitted" -> queuedThenAdmitted();
      case "queuedThenExpired" -> queuedThenExpired();
      default -> queuedThenHalfClosed();
    };
  }

  private static PoolState.Snapshot pool() {
    return server.runtime().controller().pool("gpu").snapshot(server.runtime().ticker().nanos());
  }

  private static double count(String name, String tag, String value) {
    return server.registry().find(name).tag(tag, value).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private static double sum(String name) {
    return server.registry().find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  @ParameterizedTest(name = "{0}: fault at {1} #{2}")
  @MethodSource("cases")
  void everyStepFailing_leavesNothingBehind(String name, StreamFaults.Step step, int nth)
      throws Exception {
    DRIVES.clear();
    Armed faults = new Armed(step, nth);
    ExtProcService service = new ExtProcService(server::runtime, () -> false, faults);
    double internalBefore = count("sluice.extproc.stream.errors", "cause", "internal");
    double quotaBefore = count("sluice.extproc.stream.errors", "cause", "quota_store");
    double releasedBefore = sum("sluice.permits.released");
    double admittedBefore = count("sluice.decisions", "decision", "admit");

    scenario(name).run(service);
    for (Drive d : DRIVES) {
      d.cancel(); // Envoy resets every stream in the end; a second cancel is harmless
    }

    await()
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(5))
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> {
              assertThat(pool().requestsInFlight()).as("requests in flight").isZero();
              assertThat(pool().workInFlight()).as("work in flight").isZero();
              assertThat(server.runtime().controller().pool("gpu").queueDepth("interactive"))
                  .as("queue depth")
                  .isZero();
              assertThat(service.liveStreams()).as("live streams").isZero();
            });
    double released = sum("sluice.permits.released") - releasedBefore;
    double admitted = count("sluice.decisions", "decision", "admit") - admittedBefore;
    // at most one release per admission (a fault at ADMIT may come before the admit is counted)
    assertThat(released).as("permits released").isLessThanOrEqualTo(Math.max(admitted, 2));
    boolean anyNonOk = false;
    for (Drive d : DRIVES) {
      Recording c = d.call;
      assertThat(c.okBeforeAnswer)
          .as("closed OK before the outstanding message was answered")
          .isFalse();
      assertThat(c.closes.get()).as("ended at most once").isLessThanOrEqualTo(1);
      if (c.closedWith != null && !c.closedWith.isOk()) {
        anyNonOk = true;
      }
    }
    if (faults.fired && !faults.firedInClientReset) {
      assertThat(anyNonOk).as("a stream whose step failed ends non-OK").isTrue();
      double counted =
          count("sluice.extproc.stream.errors", "cause", "internal")
              - internalBefore
              + count("sluice.extproc.stream.errors", "cause", "quota_store")
              - quotaBefore;
      assertThat(counted).as("the failure is counted").isGreaterThanOrEqualTo(1);
    }
    if (faults.fired && faults.firedInClientReset) {
      // the client reset the stream: nothing to answer, but the failure is still counted
      assertThat(count("sluice.extproc.stream.errors", "cause", "internal") - internalBefore)
          .isGreaterThanOrEqualTo(1);
    }
  }
}
