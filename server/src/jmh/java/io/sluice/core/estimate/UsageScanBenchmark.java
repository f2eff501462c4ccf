package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import io.sluice.harness.LlmStream;
import java.io.IOException;
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
 * The usage read of the floor's 0.5 KB JSON answer ({@link LlmStream#ANSWER_BODY}) by its parts,
 * old and new side by side in one invocation (the machine may be loaded: compare within a run): the
 * whole read as the response meter makes it through {@link UsageScan} ({@code usageRead}) and
 * through Jackson's blocking parser ({@code usageReadParser}: the same answer with its first member
 * name escaped, which the scan leaves to the parser, so it is the read before the scan plus the few
 * bytes the scan reads before it gives up); the scan alone; the parser alone (every token, nothing
 * interpreted); and the extractor with no body (what every read pays besides the bytes). On a
 * loaded machine read the CPU time instead of JMH's wall time: {@code UsageReadCpu}.
 *
 * <pre>
 * mvn -B -o -q -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar UsageScanBenchmark -prof gc -f 1 -wi 6 -i 6
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 6, time = 2)
@Measurement(iterations = 6, time = 2)
@Fork(1)
public class UsageScanBenchmark {
  private static final JsonFactory PLAIN = new JsonFactory();
  private TokenEstimator estimator;
  private byte[] answer;
  private byte[] escaped; // the same answer, its first member name escaped: the scan is unsure

  @Setup
  public void setUp() {
    estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    answer = LlmStream.ANSWER_BODY.getBytes(StandardCharsets.UTF_8);
    escaped =
        LlmStream.ANSWER_BODY
            .replaceFirst("\"id\"", "\"\\\\u0069d\"")
            .getBytes(StandardCharsets.UTF_8);
    UsageFields f = new UsageFields();
    if (UsageScan.read(escaped, 0, escaped.length, f)) {
      throw new IllegalStateException("the escaped answer must go to the parser");
    }
    if (!read(answer).equals(read(escaped)) || read(answer).equals(Usage.NONE)) {
      throw new IllegalStateException("the two answers must read the same usage");
    }
  }

  private Usage read(byte[] body) {
    UsageExtractor x = UsageExtractor.forResponse("application/json", estimator, "claude");
    x.onLastChunk(body, 0, body.length);
    x.onEnd();
    return x.usage();
  }

  /** The whole read through the scan (as {@code FloorPartsBenchmark.usageRead}). */
  @Benchmark
  public Usage usageRead() {
    return read(answer);
  }

  /** The whole read through Jackson's blocking parser (the read before the scan). */
  @Benchmark
  public Usage usageReadParser() {
    return read(escaped);
  }

  /** The scan alone. */
  @Benchmark
  public boolean scan() {
    return UsageScan.read(answer, 0, answer.length, new UsageFields());
  }

  /** Jackson's blocking parser over the answer, every token, nothing interpreted. */
  @Benchmark
  public int parserTokens() throws IOException {
    int n = 0;
    try (JsonParser p = PLAIN.createParser(answer, 0, answer.length)) {
      while (p.nextToken() != null) {
        n++;
      }
    }
    return n;
  }

  /** The extractor with no body: what every read pays besides the bytes. */
  @Benchmark
  public Usage extractorAlone() {
    UsageExtractor x = UsageExtractor.forResponse("application/json", estimator, "claude");
    x.onEnd();
    return x.usage();
  }
}
