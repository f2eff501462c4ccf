package io.sluice.extproc;

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
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What telemetry costs a whole Envoy-shaped stream ({@code ExtProcStreamBenchmark.envoyStream}'s
 * messages, without the gRPC transport): {@code off} is the default ({@code telemetry.enabled:
 * false}, correlation on: no OpenTelemetry listener); {@code off-nocorrelation} reads no trace
 * signal at all; {@code on-1pct} exports over OTLP with {@code sampling.ratio: 0.01} (every request
 * recorded in the GenAI and {@code sluice.*} metrics, one span in a hundred built; the exporter
 * sends to a live OTLP receiver in this JVM that discards what it gets, as a collector would take
 * it, so no export retries in the background); {@code on-1pct-traces} and {@code on-metrics} split
 * the two.
 *
 * <pre>
 * mvn -B -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar TelemetryOverheadBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class TelemetryOverheadBenchmark {
  @Param({"off", "off-nocorrelation", "on-1pct", "on-1pct-traces", "on-metrics"})
  public String telemetry;

  /**
   * {@code llm}: the LLM-shaped stream (request body buffered); {@code headers-only}: the same
   * request decided at its headers from Envoy's native AI metadata ({@code
   * LlmStream.headersOnlyMessages}, the floor's {@code headers-only} shape).
   */
  @Param({"llm", "headers-only"})
  public String shape = "llm";

  private SluiceServer server;
  private io.sluice.harness.OtlpReceiver sink;
  private ExtProcService service;
  private Metadata metadata;
  private byte[][] envoyMessages;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    sink = io.sluice.harness.OtlpReceiver.discarding();
    String to = "\ntelemetry: {enabled: true, endpoint: \"" + sink.endpoint() + "\",";
    String block =
        switch (telemetry) {
          case "off" -> "";
          case "off-nocorrelation" -> "\ntelemetry: {correlation: false}\n";
          case "on-1pct" -> to + " sampling: {ratio: 0.01}}\n";
          case "on-1pct-traces" -> // spans only: the sampling decision and 1 % of spans
              to + " sampling: {ratio: 0.01}, metrics: false}\n";
          case "on-metrics" -> // metrics only: the histograms' recordings per request
              to + " traces: false}\n";
          default -> throw new IllegalArgumentException(telemetry);
        };
    server =
        SluiceServer.start(ConfigLoader.parse(JmhPolicies.embeddedDefaultOnLoopback() + block));
    service = ExtProcService.create(server::runtime, () -> false);
    envoyMessages =
        switch (shape) {
          case "llm" -> LlmStream.messageBytes();
          case "headers-only" ->
              LlmStream.headersOnlyMessages().stream()
                  .map(io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest::toByteArray)
                  .toArray(byte[][]::new);
          default -> throw new IllegalArgumentException(shape);
        };
    metadata = new Metadata();
    metadata.put(Metadata.Key.of("content-type", Metadata.ASCII_STRING_MARSHALLER), "grpc");
  }

  @TearDown(Level.Trial)
  public void tearDown() throws InterruptedException {
    server.close();
    sink.close();
  }

  /**
   * One stream of the {@link #shape}: request headers, buffered body (LLM-shaped only), response
   * headers and body, reset.
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
}
