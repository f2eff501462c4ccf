package io.sluice.core.estimate;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Cost of one request estimate (two streaming passes plus BPE or the byte heuristic) and of usage
 * extraction from an SSE stream.
 *
 * <p>Run (compiled only under the {@code jmh} profile):
 *
 * <pre>
 * mvn -B -pl server -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar TokenEstimatorBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class TokenEstimatorBenchmark {
  private static final String PROSE =
      "When a service is overloaded, the worst thing it can do is accept every request and then"
          + " serve all of them slowly. Queues grow, latency climbs, and clients that have already"
          + " given up keep the servers busy with work nobody is waiting for. ";

  /** Model name: a BPE family or an unknown model (byte heuristic). */
  @Param({"gpt-4o", "claude-sonnet-4-5"})
  public String model;

  /** Approximate body size in bytes. */
  @Param({"1000", "10000", "100000"})
  public int bodyBytes;

  private TokenEstimator estimator;
  private EstimateLimits limits;
  private byte[] body;
  private byte[] sse;

  @Setup
  public void setUp() {
    estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    limits = new EstimateLimits(256, 4096);
    StringBuilder sb = new StringBuilder("{\"model\":\"").append(model).append("\",\"messages\":[");
    int message = 0;
    while (sb.length() < bodyBytes) {
      if (message++ > 0) {
        sb.append(',');
      }
      sb.append("{\"role\":\"user\",\"content\":\"").append(PROSE.repeat(4)).append("\"}");
    }
    body =
        sb.append("],\"max_tokens\":500,\"stream\":true}")
            .toString()
            .getBytes(StandardCharsets.UTF_8);
    StringBuilder events = new StringBuilder();
    for (int i = 0; i < 200; i++) {
      events
          .append("data: {\"choices\":[{\"delta\":{\"content\":\"token ")
          .append(i)
          .append("\"}}],\"usage\":null}\n\n");
    }
    events.append(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":200}}\n\n");
    events.append("data: [DONE]\n\n");
    sse = events.toString().getBytes(StandardCharsets.UTF_8);
  }

  @Benchmark
  public TokenEstimate estimate() {
    return estimator.estimate(RequestFormat.AUTO, body, 0, body.length, limits);
  }

  @Benchmark
  public Usage extractSseUsage() {
    UsageExtractor extractor = UsageExtractor.forResponse("text/event-stream");
    for (int offset = 0; offset < sse.length; offset += 1024) {
      extractor.onChunk(sse, offset, Math.min(1024, sse.length - offset));
    }
    extractor.onEnd();
    return extractor.usage();
  }
}
