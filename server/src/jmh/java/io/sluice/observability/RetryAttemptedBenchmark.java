package io.sluice.observability;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.core.retry.Attempt;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link RetryMetrics#attempted} of an original (the one-shot stream's attempt) from two threads on
 * the same pool and class, as the server's two event loops make it: the contention on the
 * amplification window that a single-thread loop does not show. Uses only public methods main has,
 * so the same source runs against the parent commit's jar.
 *
 * <pre>
 * java -jar server/target/benchmarks.jar RetryAttemptedBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
public class RetryAttemptedBenchmark {
  private RetryMetrics metrics;
  // the policy's names: the same instances request after request, as the server's are
  private final String pool = new String("default");
  private final String cls = new String("interactive");

  @Setup(Level.Trial)
  public void setUp() {
    metrics =
        new RetryMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), System::nanoTime);
  }

  /** One original, stamped at its arrival (a ticker time read already, as the recorder's). */
  @Benchmark
  public void original() {
    metrics.attempted(pool, cls, Attempt.ORIGINAL_UNSENT, System.nanoTime());
  }
}
