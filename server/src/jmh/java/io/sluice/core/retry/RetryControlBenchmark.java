package io.sluice.core.retry;

import io.sluice.core.time.Ticker;
import io.sluice.store.memory.InMemoryAttemptStore;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;
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
 * {@link RetryControl#check} of a plain original (no operation id, no retry signals) on the
 * in-process store with a tenant budget: the work every admitted request pays when retry control is
 * on. {@code oneTenant} asks for one pool's one tenant over and over (the common stream); {@code
 * manyTenants} walks 4 pools × 16 tenants in turn (every request a different key).
 *
 * <pre>
 * mvn -B -pl server -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar RetryControlBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RetryControlBenchmark {
  private static final ToLongFunction<String> RETRY_AFTER = p -> 1;

  private RetryControl control;
  private final String[] pools = {"gpu", "cpu", "batch", "edge"};
  private final String[] tenants = new String[16];
  private int next;

  @Setup
  public void setUp() {
    RetryPolicy policy =
        new RetryPolicy(
            true,
            Duration.ofSeconds(60),
            10_000,
            new RetryPolicy.Budget(true, RetryPolicy.Budget.Scope.TENANT, 10, 0.1),
            RetryPolicy.EarlyRetry.COUNT,
            new RetryPolicy.Duplicates(
                RetryPolicy.Duplicates.Action.REFUSE,
                Duration.ZERO,
                Duration.ofMinutes(10),
                Map.of()));
    control =
        new RetryControl(
            policy,
            new InMemoryAttemptStore(Ticker.system(), 10_000),
            "b_",
            true,
            System::nanoTime);
    for (int i = 0; i < tenants.length; i++) {
      tenants[i] = "tenant-" + i;
    }
  }

  /** One pool's one tenant, request after request. */
  @Benchmark
  public Attempt oneTenant() {
    return control
        .check("gpu", "chat", "acme", null, AttemptSignals.NONE, RETRY_AFTER)
        .toCompletableFuture()
        .join();
  }

  /** A different pool and tenant each request (4 × 16 in turn). */
  @Benchmark
  public Attempt manyTenants() {
    int n = next++;
    return control
        .check(
            pools[n & 3], "chat", tenants[(n >>> 2) & 15], null, AttemptSignals.NONE, RETRY_AFTER)
        .toCompletableFuture()
        .join();
  }
}
