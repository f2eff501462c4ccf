package io.sluice.core.estimate;

import io.sluice.core.queue.ServiceModel;
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
 * The per-request learning parts of the floor's LLM-shaped stream, each alone, as a request of the
 * embedded default policy meets them (one tenant, one route, every answer alike but for a little
 * noise): the learned reserve's read and its learning of the answer ({@link OutputReserves}), the
 * pool's service-time fit on a completion and the deadline check's prediction ({@link
 * ServiceModel}), and the model name's encoding lookup ({@link ModelEncodings}). Only public or
 * package API that the parent commits have too, so the same file runs on both jars.
 *
 * <pre>
 * mvn -B -o -q -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar LearningPartsBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class LearningPartsBenchmark {
  private OutputReserves reserves;
  private ServiceModel model;
  private ModelEncodings encodings;
  private long i;

  @Setup
  public void setUp() {
    reserves = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    model = new ServiceModel(200, 20);
    encodings = new ModelEncodings();
    for (int k = 0; k < 2_000; k++) {
      learn(k);
      model.onSample(480, 1024, 2_000_000 + (k % 7) * 10_000);
    }
  }

  private void learn(long k) {
    reserves.record(
        "default", "claude-sonnet-4-5", "class:interactive", "acme", 0.9, 1024, 1, 96 + k % 13);
  }

  /** The learned reserve of one request, then its answer learned: what each stream pays. */
  @Benchmark
  public long reserveAndLearn() {
    OutputReserves.Reserve r =
        reserves.reserve(
            "default", "claude-sonnet-4-5", "class:interactive", "acme", 0.9, 1024, 1024, 1, 1024);
    learn(i++);
    return r.outputTokens();
  }

  /**
   * As {@link #reserveAndLearn} with the tenant a fresh String per request, as a request's header
   * value is (its hash not computed yet).
   */
  @Benchmark
  public long reserveAndLearnFreshTenant() {
    String tenant = new String(TENANT_CHARS);
    OutputReserves.Reserve r =
        reserves.reserve(
            "default", "claude-sonnet-4-5", "class:interactive", tenant, 0.9, 1024, 1024, 1, 1024);
    reserves.record(
        "default", "claude-sonnet-4-5", "class:interactive", tenant, 0.9, 1024, 1, 96 + i++ % 13);
    return r.outputTokens();
  }

  private static final char[] TENANT_CHARS = "acme".toCharArray();

  /** One completion taught to the pool's service model, and the deadline check's prediction. */
  @Benchmark
  public double serviceSample() {
    model.onSample(480, 1024, 2_000_000 + (i++ % 7) * 10_000);
    return model.ready() ? model.predictWithinEvidenceNanos(480, 1024) : 0;
  }

  /** The model name's encoding, as each estimate and response meter asks it. */
  @Benchmark
  public Object encodingLookup() {
    // a fresh String per request, as a body's model member is
    return encodings.forModel(new String(MODEL_CHARS));
  }

  private static final char[] MODEL_CHARS = "claude-sonnet-4-5".toCharArray();
}
