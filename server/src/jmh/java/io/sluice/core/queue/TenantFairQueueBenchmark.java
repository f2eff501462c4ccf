package io.sluice.core.queue;

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
 * One offer + one poll on the tenant-fair queue in steady state ({@code depth} items waiting,
 * spread over {@code tenants} tenants with different weights).
 *
 * <pre>
 * java -jar server/target/benchmarks.jar TenantFairQueueBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class TenantFairQueueBenchmark {
  private static final long HOUR = 3_600_000_000_000L;

  @Param({"10", "1000"})
  public int tenants;

  @Param({"100", "10000"})
  public int depth;

  private TenantFairQueue<Object> queue;
  private String[] names;
  private long now;
  private long nextId;
  private final Object payload = new Object();

  @Setup
  public void setUp() {
    queue = new TenantFairQueue<>(new QueueBounds(Long.MAX_VALUE / 4, 1_000_000, HOUR, 1.0));
    names = new String[tenants];
    for (int i = 0; i < tenants; i++) {
      names[i] = "tenant-" + i;
    }
    now = System.nanoTime();
    for (int i = 0; i < depth; i++) {
      offerOne();
    }
  }

  private Offer offerOne() {
    long id = nextId++;
    int t = (int) (id % tenants);
    return queue.offer(
        new QueuedItem<>(
            id,
            names[t],
            1 + (t % 4),
            100 + (id % 900),
            now,
            now + HOUR,
            now + HOUR - (id % 1000),
            payload),
        now);
  }

  /** Enqueue one item and serve one: the queue stays at {@code depth}. */
  @Benchmark
  public Object offerPoll() {
    offerOne();
    return queue.poll(now).item();
  }
}
