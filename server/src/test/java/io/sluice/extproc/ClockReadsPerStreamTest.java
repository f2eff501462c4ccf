package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Metadata;
import io.grpc.stub.StreamObserver;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34, the clock reads of one ext_proc stream: a reading is taken once per transport event
 * where every rule that uses it means the same instant (the admit's deadline is the decision's
 * read; an answer sent at once is sent at its message's instant; the decision log's budget takes
 * the release's read). Counted on the thread that drives the stream (the handler runs there: a
 * direct executor), with a fake ticker and a fixed wall clock that count their reads, so nothing
 * else of the server (sweeps, timers) is counted.
 */
class ClockReadsPerStreamTest {
  private static final long DEADLINE_MS = 30_000; // the embedded default's interactive class

  private final Counting ticker = new Counting(new FakeTicker());
  private final CountingClock clock = new CountingClock(Instant.parse("2026-12-07T05:00:00Z"));
  private SluiceServer server;
  private ExtProcService service;

  @BeforeEach
  void start() throws Exception {
    String policy =
        ConfigLoader.embeddedDefaultYaml()
            .replace("0.0.0.0", "127.0.0.1")
            .replace("port: 8081", "port: 0")
            .replace("port: 8080", "port: 0")
            .replace(
                "decisionLog:\n  enabled: true\n  level: info",
                "decisionLog:\n  enabled: true\n  level: warn");
    server = SluiceServer.start(ConfigLoader.parse(policy), ticker, clock);
    service = ExtProcService.create(server::runtime, () -> false);
    oneShot(); // the first stream's one-time work (tables, windows) is not a stream's
  }

  @AfterEach
  void stop() {
    server.close();
  }

  /**
   * One-shot (headers with end_of_stream, admitted, half-close): the open, the message and the
   * decision in the pool, the admit (its deadline's time, its answer's), and the release; the
   * decision notes' arrival and the admit's epoch deadline on the wall clock.
   */
  @Test
  void oneShotStream_readsTheTickerOncePerInstant() {
    ticker.reads.set(0);
    ticker.readers.clear();
    clock.reads.set(0);
    clock.readers.clear();
    StreamFailureInjectionTest.Recording call = oneShot();
    assertThat(call.answers).hasSize(1);
    assertThat(deadlineLeftMs(call.answers.get(0))).isEqualTo(DEADLINE_MS);
    // the answer's deadline is the admit's read, its send the message's, the decision log's
    // budget the release's (the record's timing reads its own: records are rate-bounded)
    assertThat(ticker.readers)
        .containsExactly(
            "ExtProcStream.<init>",
            "ExtProcStream.onNext",
            "AdmissionSession.decideInPool",
            "AdmissionSession.admit",
            "RunningRequest.release",
            "ReplayTimingPart.write");
    // one wall read, the message's: the arrival and the admit's epoch deadline share it
    assertThat(clock.readers).containsExactly("ExtProcStream.onRequestHeaders");
  }

  /** The LLM-shaped stream: headers, buffered body (decided), response headers and body, reset. */
  @Test
  void llmStream_readsTheTickerOncePerInstant() {
    ticker.reads.set(0);
    ticker.readers.clear();
    clock.reads.set(0);
    clock.readers.clear();
    StreamFailureInjectionTest.Recording call = new StreamFailureInjectionTest.Recording();
    StreamObserver<Inbound> in = service.open(call, new Metadata());
    in.onNext(parse(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED)));
    in.onNext(
        parse(body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")));
    in.onNext(parse(responseHeaders(200, "application/json", false)));
    in.onNext(
        parse(
            responseBody(
                "{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}",
                true)));
    call.cancel();
    assertThat(call.answers).hasSize(4);
    assertThat(deadlineLeftMs(call.answers.get(1))).isEqualTo(DEADLINE_MS);
    // each answer sent at its message's instant; the reset after the release reads nothing
    assertThat(ticker.readers)
        .containsExactly(
            "ExtProcStream.<init>",
            "ExtProcStream.onNext",
            "ExtProcStream.onNext",
            "AdmissionSession.decideInPool",
            "AdmissionSession.admit",
            "ExtProcStream.onNext",
            "ExtProcStream.onNext",
            "RunningRequest.release",
            "ReplayTimingPart.write");
    // the arrival at the headers' message, the admit's epoch deadline at the body's: two events
    assertThat(clock.readers)
        .containsExactly("ExtProcStream.onRequestHeaders", "DecisionAnswers.admit");
  }

  /**
   * With a wall clock that moves at each read: the one-shot's epoch deadline is its arrival's read
   * plus the time left (one read), the LLM stream's its body's (a read of its own, later).
   */
  @Test
  void epochDeadline_isTheDecidingMessagesWallRead() {
    clock.stepMillis = 5;
    clock.reads.set(0);
    long start = clock.at.toEpochMilli();
    StreamFailureInjectionTest.Recording call = oneShot();
    assertThat(clock.reads).hasValue(1);
    assertThat(deadlineEpochMs(call.answers.get(0))).isEqualTo(start + 5 + DEADLINE_MS);
    long before = clock.at.toEpochMilli();
    call = new StreamFailureInjectionTest.Recording();
    StreamObserver<Inbound> in = service.open(call, new Metadata());
    in.onNext(parse(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED)));
    in.onNext(
        parse(body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")));
    assertThat(clock.reads).hasValue(3);
    assertThat(deadlineEpochMs(call.answers.get(1))).isEqualTo(before + 10 + DEADLINE_MS);
    call.cancel();
  }

  private static double deadlineEpochMs(ProcessingResponse r) {
    return metadataNumber(r, "deadline_epoch_ms");
  }

  private StreamFailureInjectionTest.Recording oneShot() {
    StreamFailureInjectionTest.Recording call = new StreamFailureInjectionTest.Recording();
    StreamObserver<Inbound> in = service.open(call, new Metadata());
    in.onNext(parse(headers(chat(), true, null, null)));
    in.onCompleted();
    return call;
  }

  private static Map<String, String> chat() {
    return ExtProcServerTestBase.chat("x-tenant-id", "acme");
  }

  private static Inbound parse(ProcessingRequest r) {
    return InboundMarshaller.INSTANCE.parse(new java.io.ByteArrayInputStream(r.toByteArray()));
  }

  private static double deadlineLeftMs(ProcessingResponse r) {
    return metadataNumber(r, "deadline_remaining_ms");
  }

  private static double metadataNumber(ProcessingResponse r, String key) {
    return r.getDynamicMetadata()
        .getFieldsOrThrow("sluice")
        .getStructValue()
        .getFieldsOrThrow(key)
        .getNumberValue();
  }

  /** The first frame of Sluice's that is not a clock's: who read it. */
  static String reader() {
    return StackWalker.getInstance()
        .walk(
            f ->
                f.filter(
                        x ->
                            x.getClassName().startsWith("io.sluice.")
                                && !x.getClassName()
                                    .startsWith(ClockReadsPerStreamTest.class.getName())
                                && !x.getClassName().contains("MeterClock")
                                && !x.getMethodName().equals("stepMillisOr")
                                && !x.getClassName().contains("Ticker"))
                    .findFirst()
                    .map(x -> x.getClassName().replaceAll(".*\\.", "") + "." + x.getMethodName())
                    .orElse("?"));
  }

  /** Counts the reads made on the thread that built it (the test's: the handler's). */
  static final class Counting implements Ticker {
    private final Ticker ticker;
    private final Thread owner = Thread.currentThread();
    final AtomicInteger reads = new AtomicInteger();
    final List<String> readers = new CopyOnWriteArrayList<>(); // who read, for the failure message

    Counting(Ticker ticker) {
      this.ticker = ticker;
    }

    @Override
    public long nanos() {
      if (Thread.currentThread() == owner) {
        reads.incrementAndGet();
        readers.add(reader());
      }
      return ticker.nanos();
    }
  }

  /** A fixed wall clock that counts its reads on the thread that built it. */
  static final class CountingClock extends Clock {
    private Instant at;
    long stepMillis; // moved at each read (0: fixed)
    private final Thread owner = Thread.currentThread();
    final AtomicInteger reads = new AtomicInteger();
    final List<String> readers = new CopyOnWriteArrayList<>();

    CountingClock(Instant at) {
      this.at = at;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public long millis() {
      return instant().toEpochMilli();
    }

    @Override
    public Instant instant() {
      if (Thread.currentThread() == owner) {
        reads.incrementAndGet();
        readers.add(reader());
        at = at.plusMillis(stepMillis);
      }
      return at;
    }
  }
}
