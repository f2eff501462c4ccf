package io.sluice.core.estimate;

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
 * One estimate of a chat request as applications send them: the same system prompt (about 2 KB) in
 * every request, then a user question that is new every time (a counter makes each unique), with
 * and without the {@link TokenCountCache}. Both variants build the body the same way per op.
 *
 * <pre>
 * mvn -B -pl server -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar TokenCountCacheBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class TokenCountCacheBenchmark {
  private static final String SYSTEM =
      ("You are the support assistant of an airline. Answer in at most three sentences. Quote the"
              + " fare rule you rely on by its number, never promise a refund or a rebooking, and"
              + " hand over to a human agent when the customer mentions a medical emergency, a"
              + " missed connection caused by the airline, or a lost unaccompanied minor. ")
          .repeat(5);

  /** {@code on}: the server's default cache; {@code off}: every piece tokenized. */
  @Param({"off", "on"})
  public String cache;

  private TokenEstimator estimator;
  private EstimateLimits limits;
  private byte[] head;
  private byte[] tail;
  private long n;

  @Setup
  public void setUp() {
    estimator =
        new TokenEstimator(
            EstimatorSettings.defaults(),
            cache.equals("on")
                ? new TokenCountCache(
                    TokenCountCache.DEFAULT_MAX_CHARS, TokenCountCache.DEFAULT_MIN_CHARS)
                : TokenCountCache.disabled(),
            null);
    limits = new EstimateLimits(256, 4096);
    head =
        ("{\"model\":\"gpt-4o\",\"max_tokens\":256,\"messages\":[{\"role\":\"system\",\"content\":\""
                + SYSTEM
                + "\"},{\"role\":\"user\",\"content\":\"Booking ")
            .getBytes(StandardCharsets.UTF_8);
    tail =
        (": my flight from Lisbon was cancelled this morning and the app offers me a seat two days"
                + " later. Which fare rule applies, and can I choose another date for free?\"}]}")
            .getBytes(StandardCharsets.UTF_8);
  }

  @Benchmark
  public TokenEstimate estimate() {
    byte[] id = Long.toString(n++).getBytes(StandardCharsets.US_ASCII);
    byte[] body = new byte[head.length + id.length + tail.length];
    System.arraycopy(head, 0, body, 0, head.length);
    System.arraycopy(id, 0, body, head.length, id.length);
    System.arraycopy(tail, 0, body, head.length + id.length, tail.length);
    return estimator.estimate(RequestFormat.AUTO, body, limits);
  }
}
