package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.grpc.Metadata;
import io.sluice.BlackholeCall;
import io.sluice.JmhPolicies;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.harness.LlmStream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Sluice's own work for one one-shot ext_proc stream, without the gRPC transport: open the stream,
 * resolve and decide on the request headers of build-notes §7 (end_of_stream), encode the admit
 * answer, then half-close (release, metrics, close). This is what the h2load transport ratio pays
 * on top of a no-op server; {@code baseline} is what a no-op handler does with the same objects.
 * Both parse the request from bytes per operation, as their servers do: Sluice with its wire reader
 * ({@link Inbound}), the no-op with protobuf-java's generated parser; the difference of the two is
 * Sluice's own work. {@code parseInbound} and {@code parseProtobuf} show the two parsers alone.
 *
 * <pre>
 * mvn -B -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar ExtProcStreamBenchmark
 * </pre>
 *
 * <p>With {@code -Dsluice.jmh.decisionLogOff=true} the embedded default runs with its decision log
 * off, as the floor's policy does (what is read only for a decision record is then not read).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class ExtProcStreamBenchmark {
  private SluiceServer server;
  private ExtProcService service;
  private byte[] request; // parsed per operation, as gRPC does: header keys arrive as bytes
  private Metadata metadata;
  private byte[][] envoyMessages; // request headers, body, response headers, response body

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    String policy = JmhPolicies.embeddedDefaultOnLoopback();
    if (Boolean.getBoolean("sluice.jmh.decisionLogOff")) { // as the floor's policy has it
      String off =
          policy.replace("decisionLog:\n  enabled: true", "decisionLog:\n  enabled: false");
      if (off.equals(policy)) {
        throw new IllegalStateException("embedded default changed shape: decisionLog");
      }
      policy = off;
    }
    server = SluiceServer.start(ConfigLoader.parse(policy));
    service = ExtProcService.create(server::runtime, () -> false);
    request = LlmStream.oneShotHeaders().toByteArray();
    envoyMessages = LlmStream.messageBytes();
    metadata = new Metadata();
    metadata.put(Metadata.Key.of("content-type", Metadata.ASCII_STRING_MARSHALLER), "grpc");
    metadata.put(Metadata.Key.of("te", Metadata.ASCII_STRING_MARSHALLER), "trailers");
    metadata.put(Metadata.Key.of("user-agent", Metadata.ASCII_STRING_MARSHALLER), "envoy");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    server.close();
  }

  /** One admitted stream through Sluice's handler. */
  @Benchmark
  public void admittedStream(Blackhole bh) throws Exception {
    BlackholeCall<Answer> sink = new BlackholeCall<>(bh);
    io.grpc.stub.StreamObserver<Inbound> in = service.open(sink, metadata);
    in.onNext(Inbound.parse(request)); // what Sluice's request marshaller does
    in.onCompleted();
  }

  /** What the no-op server does per stream: answer CONTINUE, complete on half-close. */
  @Benchmark
  public void baseline(Blackhole bh) throws Exception {
    BlackholeCall<Answer> sink = new BlackholeCall<>(bh);
    switch (ProcessingRequest.parseFrom(request).getRequestCase()) {
      case REQUEST_HEADERS -> sink.onNext(Responses.CONTINUE_REQUEST_HEADERS);
      default -> {}
    }
    sink.onCompleted();
  }

  /**
   * One whole LLM-shaped stream as Envoy drives a BUFFERED/STREAMED chat request (what {@code floor
   * --shape envoy} sends, from the harness's {@link LlmStream}): request headers with {@code
   * protocol_config}, the buffered 1.9 KB chat body (estimate and decide), response headers, the
   * 0.5 KB JSON answer with {@code usage} (release, actual tokens), then the reset that ends it.
   */
  @Benchmark
  public void envoyStream(Blackhole bh) throws Exception {
    BlackholeCall<Answer> sink = new BlackholeCall<>(bh);
    io.grpc.stub.StreamObserver<Inbound> in = service.open(sink, metadata);
    for (byte[] m : envoyMessages) {
      in.onNext(Inbound.parse(m));
    }
    sink.cancel();
  }

  /** The no-op server's work for the same stream: parse each message, answer CONTINUE. */
  @Benchmark
  public void envoyBaseline(Blackhole bh) throws Exception {
    BlackholeCall<Answer> sink = new BlackholeCall<>(bh);
    for (byte[] m : envoyMessages) {
      sink.onNext(
          switch (ProcessingRequest.parseFrom(m).getRequestCase()) {
            case REQUEST_HEADERS -> Responses.CONTINUE_REQUEST_HEADERS;
            case REQUEST_BODY -> Responses.CONTINUE_REQUEST_BODY;
            case RESPONSE_HEADERS -> Responses.CONTINUE_RESPONSE_HEADERS;
            default -> Responses.CONTINUE_RESPONSE_BODY;
          });
    }
    sink.cancel();
  }

  /** Sluice's request marshaller on the same message (headers read from the wire). */
  @Benchmark
  public void parseInbound(Blackhole bh) throws Exception {
    bh.consume(Inbound.parse(request));
  }

  /** protobuf-java's generated parser on the same message (what the no-op server does). */
  @Benchmark
  public void parseProtobuf(Blackhole bh) throws Exception {
    bh.consume(ProcessingRequest.parseFrom(request));
  }
}
