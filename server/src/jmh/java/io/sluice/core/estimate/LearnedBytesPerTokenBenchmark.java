package io.sluice.core.estimate;

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
 * Cost of the learned ratio a headers-only request is estimated with ({@link
 * LearnedBytesPerToken#bytesPerToken}), and of its whole estimate ({@link
 * TokenEstimator#fromContentLength(long, String, String, EstimateLimits)}): the pool's key, or a
 * pool-and-model key, among 64 warmed keys. The model's name is a new string each request, as a
 * request's header is.
 *
 * <pre>
 * mvn -B -pl server -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar LearnedBytesPerTokenBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class LearnedBytesPerTokenBenchmark {
  /** The model a request declares at its headers: none (the pool's key), or one warmed. */
  @Param({"", "gpt-4o"})
  public String model;

  private LearnedBytesPerToken learned;
  private TokenEstimator estimator;
  private EstimateLimits limits;
  private String[] models; // equal names, distinct strings: each request parses its own
  private int next;

  @Setup
  public void setUp() {
    learned = new LearnedBytesPerToken(LearnedBytesPerToken.Settings.DEFAULTS);
    for (int p = 0; p < 8; p++) {
      for (int m = 0; m < 8; m++) {
        for (int i = 0; i < 8; i++) {
          learned.learn("pool-" + p, "model-" + m, "tenant-" + i, 4_000, 1_000 + i, 0);
        }
      }
    }
    for (int i = 0; i < 8; i++) {
      learned.learn("chat", "gpt-4o", "tenant-" + i, 4_000, 1_000 + i, 0);
    }
    estimator =
        new TokenEstimator(EstimatorSettings.defaults(), TokenCountCache.disabled(), learned);
    limits = new EstimateLimits(256, 4096);
    models = new String[16];
    for (int i = 0; i < models.length; i++) {
      models[i] = model.isEmpty() ? null : new String(model.toCharArray());
    }
  }

  private String model() {
    int i = next;
    next = (i + 1) & (models.length - 1);
    return models[i];
  }

  @Benchmark
  public double bytesPerToken() {
    return learned.bytesPerToken("chat", model());
  }

  @Benchmark
  public TokenEstimate fromContentLength() {
    return estimator.fromContentLength(4_000, "chat", model(), limits);
  }
}
