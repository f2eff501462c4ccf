package io.sluice.core.estimate;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.knuddels.jtokkit.api.Encoding;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
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
 * The cost figures of docs/estimation.md on the calibration corpus (formerly the {@code
 * performance_*} methods of {@code EstimatorCalibrationTest}, which timed the wall clock inside the
 * unit tests): one estimate of a ~10 KB chat body of English prose and Python code (o200k, cl100k,
 * byte heuristic), and the o200k tokenizer alone on the English prose repeated 40 times (chars per
 * millisecond = {@link #PROSE_CHARS} / the score in ms).
 *
 * <p>Run (compiled only under the {@code jmh} profile, which also puts the corpus on the class
 * path):
 *
 * <pre>
 * mvn -B -ntp -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar CalibrationCorpusBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class CalibrationCorpusBenchmark {
  /** Characters per {@link #tokenizeProse} call (the English prose of the corpus, 40 times). */
  public static final int PROSE_REPEAT = 40;

  static int PROSE_CHARS;

  /** gpt-4o (o200k), gpt-4-turbo (cl100k) or an unknown model (byte heuristic). */
  @Param({"gpt-4o", "gpt-4-turbo", "claude-sonnet-4-5"})
  public String model;

  private TokenEstimator estimator;
  private EstimateLimits limits;
  private byte[] body;
  private Encoding o200k;
  private String prose;

  @Setup
  public void setUp() {
    String en = corpus("prose-en.txt");
    String code = corpus("code-python.txt");
    body = chatBody(model, en, code, en, code, en, code, en);
    estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    limits = new EstimateLimits(256, 4096);
    o200k = ModelEncodings.o200k();
    prose = en.repeat(PROSE_REPEAT);
    PROSE_CHARS = prose.length();
    long tokens = estimator.estimate(RequestFormat.AUTO, body, limits).inputTokens();
    if (body.length < 9_000 || body.length > 12_000 || tokens <= 0) {
      throw new IllegalStateException("body " + body.length + " bytes, " + tokens + " tokens");
    }
  }

  @Benchmark
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public TokenEstimate estimateTenKilobyteChatBody() {
    return estimator.estimate(RequestFormat.AUTO, body, limits);
  }

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public int tokenizeProse() {
    return o200k.countTokensOrdinary(prose);
  }

  private static String corpus(String name) {
    String path = "/estimate/calibration/" + name;
    try (InputStream in = CalibrationCorpusBenchmark.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException(path + " not on the class path (build with -Pjmh)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The chat body EstimatorCalibrationTest builds: alternating user/assistant messages. */
  private static byte[] chatBody(String model, String... texts) {
    StringBuilder sb = new StringBuilder("{\"model\":\"").append(model).append("\",\"messages\":[");
    for (int i = 0; i < texts.length; i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append("{\"role\":\"")
          .append(i % 2 == 0 ? "user" : "assistant")
          .append("\",\"content\":\"")
          .append(JsonStringEncoder.getInstance().quoteAsString(texts[i]))
          .append("\"}");
    }
    return sb.append("],\"max_tokens\":500}").toString().getBytes(StandardCharsets.UTF_8);
  }
}
