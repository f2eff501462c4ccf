package io.sluice.rls;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.sluice.BlackholeCall;
import io.sluice.JmhPolicies;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Sluice's own work for one ShouldRateLimit call on the in-process store, without the gRPC
 * transport: map the request, match the two-entry descriptor, count the fixed window, decide, build
 * the response. The h2load RLS ratio pays this on top of a no-op server.
 *
 * <pre>
 * mvn -B -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar RateLimitServiceBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RateLimitServiceBenchmark {
  private Path runtime;
  private SluiceServer server;
  private RateLimitServiceAdapter service;
  private RateLimitRequest request;
  private byte[] wire; // parsed per call, as gRPC does

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    runtime = Files.createTempDirectory("sluice-rls-jmh");
    Files.createDirectories(runtime.resolve("config"));
    Files.writeString(
        runtime.resolve("config").resolve("bench.yaml"),
        """
        domain: bench
        descriptors:
          - key: tenant
            descriptors:
              - key: model
                rate_limit: {unit: second, requests_per_unit: 1000000000}
        """);
    String policy =
        JmhPolicies.embeddedDefaultOnLoopback()
            + "\nrateLimit: {enabled: true, env: {RUNTIME_ROOT: \""
            + runtime
            + "\", RUNTIME_SUBDIRECTORY: \"\", RUNTIME_WATCH_ROOT: \"false\"}}\n";
    server = SluiceServer.start(ConfigLoader.parse(policy));
    service = (RateLimitServiceAdapter) server.rateLimitService().service();
    request =
        RateLimitRequest.newBuilder()
            .setDomain("bench")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .addEntries(
                        RateLimitDescriptor.Entry.newBuilder().setKey("tenant").setValue("acme"))
                    .addEntries(
                        RateLimitDescriptor.Entry.newBuilder().setKey("model").setValue("gpt")))
            .setHitsAddend(1)
            .build();
    wire = request.toByteArray();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    server.close();
    try (var files = Files.walk(runtime)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  /** One within-limit call answered on the calling thread. */
  @Benchmark
  public void shouldRateLimit(Blackhole bh) throws Exception {
    service.shouldRateLimit(
        RlsRequestReader.read(wire), // what the request marshaller does per call
        new BlackholeCall<>(bh));
  }
}
