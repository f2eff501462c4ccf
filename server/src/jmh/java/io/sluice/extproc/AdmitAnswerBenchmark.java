package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The answer of the common admit alone (the default {@code responses} config, an estimated
 * request): {@code onePass} as {@link DecisionAnswers} writes it now ({@link AdmitAnswer}: the time
 * left changes each time, so the last answer's bytes with the numbers written over), {@code
 * written} the same with no last answer (written whole), {@code general} the same bytes through the
 * general encoder, as it was written before (value arrays, the deadline entries' array, a {@code
 * DecisionFields}). Both in one jar, so one run compares them.
 *
 * <pre>
 * java -jar server/target/benchmarks.jar AdmitAnswerBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class AdmitAnswerBenchmark {
  private final AnswerEncoder.Entries entries = new AnswerEncoder.Entries();
  private final SluiceConfig.Responses cfg = SluiceConfig.Responses.DEFAULTS;
  // the policy's names: the same instances request after request, as the server's are
  private final String tier = new String("standard");
  private final String cls = new String("interactive");
  private final String pool = new String("default");
  private final String route = new String("chat");
  private final String tenant = new String("tenant-0042");
  private long left = 29_873;
  private static final byte[] NONE = new byte[0];

  @Benchmark
  public byte[] onePass() {
    left = left == 29_873 ? 29_874 : 29_873;
    return AdmitAnswer.encode(
        AdmitHeaders.of(cfg),
        false,
        false,
        entries.route(tier, cls, pool, route),
        tenant,
        false,
        true,
        412,
        1024,
        1436,
        left,
        1.7e12 + left,
        NONE);
  }

  /**
   * {@code onePass} with no last answer to start from (a new layout each time: another tenant or
   * route, digits of another count): the whole answer written.
   */
  @Benchmark
  public byte[] written() {
    AdmitHeaders.of(cfg).lastAnswer = null;
    return onePass();
  }

  @Benchmark
  public byte[] general() {
    left = left == 29_873 ? 29_874 : 29_873;
    AdmitHeaders h = AdmitHeaders.of(cfg);
    return AnswerEncoder.admit(
        entries,
        false,
        h.keys(true),
        h.values(false, true, 412, 1024, 1436, left),
        null,
        false,
        new AnswerEncoder.DecisionFields(
            true,
            tenant,
            tier,
            cls,
            pool,
            route,
            "admit",
            "admitted",
            true,
            412,
            1024,
            1436,
            null,
            null,
            AnswerEncoder.numberEntries(
                "deadline_remaining_ms", left, "deadline_epoch_ms", 1.7e12 + left)));
  }
}
