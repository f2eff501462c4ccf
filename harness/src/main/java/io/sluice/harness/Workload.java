package io.sluice.harness;

import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What the {@link LoadGenerator} offers: open-loop Poisson arrivals whose rate follows {@code
 * phases}, each arrival drawn from {@code tenants} and {@code classes} by share.
 *
 * @param classes request classes (at least one)
 * @param tenants tenants (at least one)
 * @param phases the arrival rate over time, in order (steps)
 * @param cancelFraction fraction of logical requests whose client disconnects on its own, at a
 *     uniform time in {@code [cancelMin, cancelMax]} after arrival (while queued or mid-stream)
 * @param cancelMin earliest voluntary disconnect
 * @param cancelMax latest voluntary disconnect
 * @param maxRetries retries per logical request after a 429/503 that carried Retry-After (0 = none)
 * @param drain after the last arrival, how long to wait for requests still in flight before the run
 *     ends (they are then counted as unfinished)
 * @param seed random seed (arrivals, mixes, sizes)
 * @param maxArrivals at most this many logical requests arrive, whatever the phases say (each makes
 *     at most {@code 1 + maxRetries} HTTP requests), so a run is bounded in count as well as in
 *     time
 */
public record Workload(
    List<RequestClass> classes,
    List<Tenant> tenants,
    List<Phase> phases,
    double cancelFraction,
    Duration cancelMin,
    Duration cancelMax,
    int maxRetries,
    Duration drain,
    long seed,
    int maxArrivals) {

  /** Default bound on arrivals: far above any scenario here (a few thousand), far below memory. */
  public static final int DEFAULT_MAX_ARRIVALS = 200_000;

  /** A workload bounded by {@link #DEFAULT_MAX_ARRIVALS}. */
  public static Workload of(
      List<RequestClass> classes,
      List<Tenant> tenants,
      List<Phase> phases,
      double cancelFraction,
      Duration cancelMin,
      Duration cancelMax,
      int maxRetries,
      Duration drain,
      long seed) {
    return new Workload(
        classes,
        tenants,
        phases,
        cancelFraction,
        cancelMin,
        cancelMax,
        maxRetries,
        drain,
        seed,
        DEFAULT_MAX_ARRIVALS);
  }

  public Workload {
    classes = List.copyOf(classes);
    tenants = List.copyOf(tenants);
    phases = List.copyOf(phases);
    if (classes.isEmpty() || tenants.isEmpty() || phases.isEmpty()) {
      throw new IllegalArgumentException("classes/tenants/phases: empty (expected: at least one)");
    }
    if (cancelFraction < 0 || cancelFraction > 1) {
      throw new IllegalArgumentException("cancelFraction: " + cancelFraction + " (expected: 0..1)");
    }
    if (maxArrivals < 1) {
      throw new IllegalArgumentException("maxArrivals: " + maxArrivals + " (expected: >= 1)");
    }
    if (maxRetries < 0) {
      throw new IllegalArgumentException("maxRetries: " + maxRetries + " (expected: >= 0)");
    }
  }

  /** Total arrival time (sum of the phases). */
  public Duration duration() {
    return phases.stream().map(Phase::duration).reduce(Duration.ZERO, Duration::plus);
  }

  /** The same workload with every phase duration multiplied by {@code factor}. */
  public Workload scaled(double factor) {
    return new Workload(
        classes,
        tenants,
        phases.stream()
            .map(
                p ->
                    new Phase(
                        p.label(),
                        Duration.ofNanos((long) (p.duration().toNanos() * factor)),
                        p.ratePerSecond()))
            .toList(),
        cancelFraction,
        cancelMin,
        cancelMax,
        maxRetries,
        drain,
        seed,
        maxArrivals);
  }

  /**
   * One kind of request.
   *
   * @param name label in reports (usually the Sluice class)
   * @param sluiceClass sent as trusted gRPC metadata {@code x-sluice-class} (null: route default)
   * @param path HTTP path
   * @param share relative share of arrivals
   * @param promptTokensMin smallest prompt (uniform between min and max)
   * @param promptTokensMax largest prompt
   * @param outputTokensMin shortest answer
   * @param outputTokensMax longest answer; also sent as {@code max_tokens} (the client's cap)
   *     unless {@code maxTokensMin}/{@code maxTokensMax} say otherwise
   * @param deadline the client's deadline: it disconnects then and the request counts as missed
   * @param ttftSlo time-to-first-token objective, for reports only
   * @param maxTokensMin with {@code maxTokensMax}: the {@code max_tokens} clients send, uniform in
   *     that range, independent of the answer's length (clients ask for 4096 and get 200); 0, 0:
   *     {@code outputTokensMax}; {@link #ORACLE}, {@link #ORACLE}: the answer's own length (a
   *     client that knew it)
   * @param maxTokensMax see {@code maxTokensMin}
   */
  public record RequestClass(
      String name,
      @Nullable String sluiceClass,
      String path,
      double share,
      int promptTokensMin,
      int promptTokensMax,
      int outputTokensMin,
      int outputTokensMax,
      Duration deadline,
      Duration ttftSlo,
      int maxTokensMin,
      int maxTokensMax) {
    /** {@code maxTokensMin} and {@code maxTokensMax} of clients that send the answer's length. */
    public static final int ORACLE = -1;

    /**
     * A class whose clients send {@code outputTokensMax} as {@code max_tokens} ({@link
     * #withMaxTokens} for other clients).
     */
    public static RequestClass of(
        String name,
        @Nullable String sluiceClass,
        String path,
        double share,
        int promptTokensMin,
        int promptTokensMax,
        int outputTokensMin,
        int outputTokensMax,
        Duration deadline,
        Duration ttftSlo) {
      return new RequestClass(
          name,
          sluiceClass,
          path,
          share,
          promptTokensMin,
          promptTokensMax,
          outputTokensMin,
          outputTokensMax,
          deadline,
          ttftSlo,
          0,
          0);
    }

    /** The same class with clients sending {@code max_tokens} in {@code [min, max]}. */
    public RequestClass withMaxTokens(int min, int max) {
      return new RequestClass(
          name,
          sluiceClass,
          path,
          share,
          promptTokensMin,
          promptTokensMax,
          outputTokensMin,
          outputTokensMax,
          deadline,
          ttftSlo,
          min,
          max);
    }

    public RequestClass {
      if (share <= 0 || promptTokensMin < 1 || promptTokensMax < promptTokensMin) {
        throw new IllegalArgumentException(name + ": share/prompt range invalid");
      }
      if (outputTokensMin < 1 || outputTokensMax < outputTokensMin) {
        throw new IllegalArgumentException(name + ": output range invalid");
      }
      boolean fixed = maxTokensMin == 0 && maxTokensMax == 0;
      boolean oracle = maxTokensMin == ORACLE && maxTokensMax == ORACLE;
      if (!fixed && !oracle && (maxTokensMin < 1 || maxTokensMax < maxTokensMin)) {
        throw new IllegalArgumentException(
            name
                + ": maxTokens range "
                + maxTokensMin
                + ".."
                + maxTokensMax
                + " (expected: 0..0, ORACLE..ORACLE, or 1 <= min <= max)");
      }
    }

    double meanPromptTokens() {
      return (promptTokensMin + promptTokensMax) / 2.0;
    }

    double meanOutputTokens() {
      return (outputTokensMin + outputTokensMax) / 2.0;
    }
  }

  /**
   * One tenant, sent as trusted gRPC metadata {@code x-sluice-tenant}. A tenant named {@code
   * class:<name>} sends all requests of class {@code <name>} and no others (its share is then
   * unused).
   *
   * @param share relative share of arrivals
   */
  public record Tenant(String name, double share) {
    public Tenant {
      if (share <= 0) {
        throw new IllegalArgumentException(name + ": share " + share + " (expected: > 0)");
      }
    }
  }

  /** A step of the arrival rate (Poisson with this mean rate). */
  public record Phase(String label, Duration duration, double ratePerSecond) {
    public Phase {
      if (duration.isNegative() || ratePerSecond < 0) {
        throw new IllegalArgumentException(label + ": negative duration or rate");
      }
    }
  }
}
