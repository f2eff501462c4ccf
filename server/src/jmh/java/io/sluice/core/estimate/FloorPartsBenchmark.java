package io.sluice.core.estimate;

import io.sluice.harness.LlmStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The body parts of the floor's LLM-shaped stream ({@link LlmStream}), each alone: the request
 * body's estimate (the 1.9 KB chat body, format known from the route as the floor's {@code
 * /v1/chat/completions}, byte heuristic) and the usage read of the 0.5 KB JSON answer as the
 * response meter makes it (whole, in one chunk). Run on two jars (this build, the parent) with
 * {@code -prof gc}: {@code gc.alloc.rate.norm} (B/op) holds under load, ns/op does not.
 *
 * <pre>
 * mvn -B -o -q -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar FloorPartsBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class FloorPartsBenchmark {
  private TokenEstimator estimator;
  private EstimateLimits limits;
  private OutputShape shape;
  private byte[] chat;
  private byte[] answer;

  @Setup
  public void setUp() {
    estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    limits = new EstimateLimits(256, 4096);
    shape = new OutputShape();
    chat = LlmStream.CHAT_BODY.getBytes(StandardCharsets.UTF_8);
    answer = LlmStream.ANSWER_BODY.getBytes(StandardCharsets.UTF_8);
  }

  /** The request body's estimate: one scan, the prompt tallied with the byte heuristic. */
  @Benchmark
  public TokenEstimate requestEstimate() {
    return estimator.estimate(RequestFormat.OPENAI_CHAT, chat, 0, chat.length, limits, shape);
  }

  /** The answer's usage, as the response meter reads a JSON answer that came whole. */
  @Benchmark
  public Usage usageRead() {
    UsageExtractor x = UsageExtractor.forResponse("application/json", estimator, "claude");
    x.onLastChunk(answer, 0, answer.length);
    x.onEnd();
    return x.usage();
  }
}
