package io.sluice.calibrate;

import java.util.Locale;

/**
 * The pool a calibration proposes, in the policy's own keys ({@code pools.<name>.capacity}, {@code
 * maxRequests}, {@code inputWeight}, {@code outputWeight}; the class's {@code queue} bounds;
 * docs/configuration.md):
 *
 * <ul>
 *   <li><b>static</b>: {@code maxRequests} = floor(0.8 × knee) (at least 1), {@code capacity} =
 *       that many requests of the mix's mean work; the class queue holds at most one cap's worth
 *       ({@code queue.workShare: 1.0}, {@code queue.maxItems} = {@code maxRequests}).
 *   <li><b>adaptive</b>: the knee itself as the ceiling ({@code capacity}, {@code maxRequests}), a
 *       floor of a quarter of the knee ({@code adaptive.minRequests}, at least 1, and {@code
 *       adaptive.minCapacity} = that many requests of mean work); the queue bound equals the
 *       ceiling.
 * </ul>
 *
 * Work per request = inputWeight × prompt tokens + outputWeight × max output tokens (what Sluice
 * reserves at admission), averaged over the mix by weight; prompt tokens are scaled by what the
 * endpoint reported in {@code usage} when it did.
 *
 * @param knee the knee's concurrency
 * @param staticRequests maxRequests of the static proposal
 * @param workPerRequest mean work units per request of the mix
 * @param adaptiveMinRequests the adaptive floor in requests
 * @param staticYaml a policy file with the static pool (validates with {@code sluice validate})
 * @param adaptiveYaml the same with the adaptive block
 */
public record Proposal(
    int knee,
    int staticRequests,
    long workPerRequest,
    int adaptiveMinRequests,
    String staticYaml,
    String adaptiveYaml) {

  /** Fraction of the knee the static proposal admits. */
  public static final double STATIC_FRACTION = 0.8;

  /** Fraction of the knee the adaptive floor keeps. */
  public static final double ADAPTIVE_FLOOR_FRACTION = 0.25;

  /**
   * Names and weights of the proposed pool.
   *
   * @param pool pool name
   * @param requestClass class whose queue is bounded
   * @param inputWeight work units per input token
   * @param outputWeight work units per reserved output token
   */
  public record Names(String pool, String requestClass, double inputWeight, double outputWeight) {}

  public long staticCapacity() {
    return staticRequests * workPerRequest;
  }

  public long kneeCapacity() {
    return (long) knee * workPerRequest;
  }

  public long adaptiveMinCapacity() {
    return adaptiveMinRequests * workPerRequest;
  }

  /**
   * Mean work units per request: each entry's {@code inputWeight × promptTokens × promptScale +
   * outputWeight × maxTokens}, rounded up as the pool rounds, averaged by weight and rounded up.
   */
  public static long workPerRequest(Mix mix, double promptScale, Names n) {
    double total = 0;
    double sum = 0;
    for (Mix.Entry e : mix.entries()) {
      double w =
          Math.ceil(
              n.inputWeight() * Math.round(e.promptTokens() * promptScale)
                  + n.outputWeight() * e.maxTokens());
      sum += e.weight() * Math.max(1, w);
      total += e.weight();
    }
    return Math.max(1, (long) Math.ceil(sum / total));
  }

  /** The proposal for {@code analysis}'s knee ({@code knee >= 1}). */
  public static Proposal of(
      Knee.Analysis analysis, Mix mix, double promptScale, Names n, String header) {
    int knee = analysis.kneeConcurrency();
    if (knee < 1) {
      throw new IllegalArgumentException("knee: " + knee + " (expected: >= 1)");
    }
    long work = workPerRequest(mix, promptScale, n);
    int staticRequests = Math.max(1, (int) Math.floor(STATIC_FRACTION * knee));
    int minRequests = Math.max(1, (int) Math.round(ADAPTIVE_FLOOR_FRACTION * knee));
    String workLine =
        String.format(
            Locale.ROOT,
            "# work per request: %s x %.0f prompt + %s x %.0f max output tokens = %d work units"
                + " (mix mean%s)\n",
            Report.number(n.inputWeight()),
            mix.meanPromptTokens() * promptScale,
            Report.number(n.outputWeight()),
            mix.meanMaxTokens(),
            work,
            promptScale == 1.0 ? "" : ", prompts as the endpoint counted them");
    String staticYaml =
        header
            + "# static: 80 % of the knee ("
            + knee
            + " concurrent requests)\n"
            + workLine
            + pool(n, staticRequests * work, staticRequests, work, "floor(0.8 x knee " + knee + ")")
            + queue(n, staticRequests);
    String adaptiveYaml =
        header
            + "# adaptive: the knee ("
            + knee
            + ") is the ceiling, a quarter of it the floor; needs pools.<name>.adaptive\n"
            + workLine
            + pool(n, (long) knee * work, knee, work, "the knee")
            + "    adaptive:\n"
            + "      enabled: true\n"
            + String.format(
                Locale.ROOT,
                "      minCapacity: %-10d # floor: %d requests x %d work units\n",
                minRequests * work,
                minRequests,
                work)
            + String.format(
                Locale.ROOT,
                "      minRequests: %-10d # about a quarter of the knee\n",
                minRequests)
            + queue(n, knee);
    return new Proposal(knee, staticRequests, work, minRequests, staticYaml, adaptiveYaml);
  }

  private static String pool(Names n, long capacity, int requests, long work, String why) {
    return "pools:\n"
        + "  "
        + n.pool()
        + ":\n"
        + String.format(
            Locale.ROOT,
            "    capacity: %-13d # work units: %d requests x %d\n",
            capacity,
            requests,
            work)
        + String.format(Locale.ROOT, "    maxRequests: %-10d # %s\n", requests, why)
        + "    inputWeight: "
        + Report.number(n.inputWeight())
        + "\n"
        + "    outputWeight: "
        + Report.number(n.outputWeight())
        + "\n";
  }

  private static String queue(Names n, int requests) {
    return "classes:\n"
        + "  "
        + n.requestClass()
        + ":   # the queue bound equals the cap; the same in every class of this pool\n"
        + "    queue: {workShare: 1.0, maxItems: "
        + requests
        + "}\n";
  }
}
