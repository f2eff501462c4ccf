package io.sluice.core.admission;

import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
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
 * One uncontended admit + release pair on the embedded default policy's pool (target: under 1 µs).
 *
 * <pre>
 * mvn -B -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar AdmissionControllerBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class AdmissionControllerBenchmark {
  private AdmissionController controller;
  private AdmissionRequest request;
  private long now;

  @Setup
  public void setUp() {
    SluiceConfig config = ConfigLoader.embeddedDefault();
    controller = Controllers.forPolicy(config, Math::random);
    PoolPolicy pool = config.pools().values().iterator().next();
    ClassPolicy interactive = config.classes().get("interactive");
    Tenant tenant = new Tenant("acme", config.tiers().values().iterator().next());
    now = System.nanoTime();
    request =
        new AdmissionRequest(pool, interactive, tenant, 1500, now, now + 30_000_000_000L, -1, -1);
  }

  /** tryAdmit on an idle pool, then release the permit as completed. */
  @Benchmark
  public boolean admitRelease() {
    Decision d = controller.decide(request, Ask.now(now));
    if (d instanceof Decision.Admit admit) {
      return admit.permit().release(Outcome.COMPLETED, now);
    }
    throw new IllegalStateException("not admitted: " + d);
  }
}
