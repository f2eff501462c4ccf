package io.sluice.observability;

import io.micrometer.core.instrument.Clock;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.session.Charge;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * The admission meters one request records through {@link ClassMeters}, as {@link SessionRecorder}
 * calls them, on a real Prometheus registry (the server's, with a wall clock that is one volatile
 * read as its {@code MeterClock} is): {@code llmRequest} is an LLM-shaped request (admitted at the
 * body, usage reported), {@code oneShot} a request admitted at its headers that ends without an
 * answer. Uses only the public methods main has, so the same source runs against the parent
 * commit's jar ({@link ClassMetersCpu}).
 *
 * <pre>
 * java -jar server/target/benchmarks.jar ClassMetersBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class ClassMetersBenchmark {
  private PrometheusMeterRegistry registry;
  private AdmissionMetrics metrics;
  // the policy's names: the same instances request after request, as the server's are
  private final String pool = new String("default");
  private final String cls = new String("interactive");
  private final String tier = new String("standard");
  private final String format = new String("openai_chat");

  @Setup(Level.Trial)
  public void setUp() {
    registry =
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT, new PrometheusRegistry(), CLOCK);
    metrics = new AdmissionMetrics(registry, System::nanoTime);
  }

  /** The meters of one LLM-shaped request: admit at the body, answer with usage, release. */
  @Benchmark
  public ClassMeters llmRequest() {
    ClassMeters m = metrics.forClass(pool, cls, tier);
    m.admitted("body", 14_000);
    m.estimated(1_210, 512);
    m.reserveDecision(OutputReserves.RULE_LEARNED);
    m = metrics.forClass(pool, cls, tier);
    m.upstreamResponse(200);
    m = metrics.forClass(pool, cls, tier);
    m.released(Outcome.COMPLETED, 180_000_000L);
    m = metrics.forClass(pool, cls, tier);
    m.actual(format, 1_180, 310, 1_210, 512);
    m = metrics.forClass(pool, cls, tier);
    m.charged(Charge.REPORTED, 1_180, 310);
    return m;
  }

  /** The meters of one one-shot request: admit at the headers, release with no answer. */
  @Benchmark
  public ClassMeters oneShot() {
    ClassMeters m = metrics.forClass(pool, cls, tier);
    m.admitted("headers", 9_000);
    m.estimated(300, 512);
    m.reserveDecision(OutputReserves.RULE_PRIOR);
    m = metrics.forClass(pool, cls, tier);
    m.released(Outcome.COMPLETED, 40_000L);
    m = metrics.forClass(pool, cls, tier);
    m.charged(Charge.NO_ANSWER, 300, 0);
    return m;
  }

  /** Wall time one volatile read (as the server's MeterClock), monotonic time exact. */
  private static final Clock CLOCK =
      new Clock() {
        private volatile long wall = System.currentTimeMillis();

        @Override
        public long wallTime() {
          return wall;
        }

        @Override
        public long monotonicTime() {
          return System.nanoTime();
        }
      };
}
