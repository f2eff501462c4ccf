package io.sluice.bench;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.config.ConfigLoader;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.observability.MetricNames;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Equal-rank classes measured from outside: does the order of the classes in the policy file decide
 * who is served, do shares hold on request slots, and is a wait predicted past the class's queue
 * time refused at once? Two runs, each with the same arrivals (same seed) against several Sluice
 * servers side by side (each with its own upstream), whose policies differ only in the order the
 * two classes are listed:
 *
 * <ol>
 *   <li>{@code order}: interactive (60 % of arrivals) and batch (40 %) at the same rank, small
 *       reserves (20 % each, borrowing on), at 2x capacity, so most of the pool is lent and the
 *       equal-rank rule decides who gets it. Three servers: interactive listed first, batch listed
 *       first, and interactive first again; the last pair differs in nothing, so its difference is
 *       the run-to-run noise the first pair is judged against.
 *   <li>{@code slots}: the same two classes at the same rank on a pool whose work capacity never
 *       binds and whose {@code maxRequests} (K = 16) does; interactive reserves 70 % (all of it
 *       guaranteed, {@code lendableShare} 0: 11 slots), batch 10 % and borrows. Run twice: {@code
 *       over}, each class offering 1x capacity (interactive's share of the completions should be at
 *       least 11/16), and {@code below}, interactive at 0.5x (about 8 slots of demand, below its
 *       11) beside batch at 1.5x (interactive should be served in full, without waiting). Refusals
 *       should come at once ({@code deadline_unreachable} in milliseconds, with Retry-After) when
 *       the predicted wait exceeds the class's {@code maxQueueWait}; the servers' own queue metrics
 *       show that no request was queued with a predicted wait above it (those that expired were
 *       predicted to start in time and did not).
 * </ol>
 */
@Command(
    name = "order",
    description =
        "Equal-rank classes listed in both orders (same arrivals): served counts per class,"
            + " request-slot shares, refusals at once vs after a hold.")
final class ClassOrder implements Callable<Integer> {
  @Option(
      names = "--scale",
      description = "multiply the 20 s arrival phase of each run (default: ${DEFAULT-VALUE})",
      defaultValue = "1.0")
  double scale = 1.0;

  @Option(
      names = "--out",
      description = "directory for order.md (default: ${DEFAULT-VALUE})",
      defaultValue = "bench-results")
  Path out = Path.of("bench-results");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final String INTERACTIVE_FIRST = "sluice, interactive first";
  static final String BATCH_FIRST = "sluice, batch first";
  static final String AGAIN = "sluice, interactive first (again)";

  private static final String ORDER_INTERACTIVE =
      "  interactive: {rank: 0, reservedShare: 0.2, borrow: true, deadline: 8s,"
          + " maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";
  private static final String ORDER_BATCH =
      "  batch: {rank: 0, reservedShare: 0.2, borrow: true, deadline: 8s,"
          + " maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";
  private static final String SLOTS_INTERACTIVE =
      "  interactive: {rank: 0, reservedShare: 0.7, borrow: true, deadline: 8s,"
          + " maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";
  private static final String SLOTS_BATCH =
      "  batch: {rank: 0, reservedShare: 0.1, borrow: true, deadline: 8s,"
          + " maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";

  /** The {@code order} run's policy with the classes in the given order. */
  static String orderPolicy(boolean batchFirst) {
    return Policies.policy(
        Scenario.UPSTREAM.batchSlots() * Scenario.CHAT_WORK,
        Scenario.UPSTREAM.batchSlots(),
        3000,
        batchFirst ? ORDER_BATCH + ORDER_INTERACTIVE : ORDER_INTERACTIVE + ORDER_BATCH,
        "interactive");
  }

  /** The {@code slots} run's policy: work never binds, maxRequests (K) does. */
  static String slotsPolicy(boolean batchFirst) {
    return Policies.policy(
        1_000_000_000_000L,
        Scenario.UPSTREAM.batchSlots(),
        3000,
        batchFirst ? SLOTS_BATCH + SLOTS_INTERACTIVE : SLOTS_INTERACTIVE + SLOTS_BATCH,
        "interactive");
  }

  static Workload workload(double interactiveShare, double multiple, double scale) {
    List<Workload.RequestClass> classes =
        List.of(
            Scenario.chat("interactive", "interactive", interactiveShare),
            Scenario.chat("batch", "batch", 1 - interactiveShare));
    List<Workload.Tenant> four =
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1));
    double cap = Scenario.capacity(classes);
    return Scenario.workload(
            classes, four, Scenario.stepsOf(Duration.ofSeconds(20), cap, multiple), 0)
        .scaled(scale);
  }

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    StringBuilder md = new StringBuilder();

    Workload w1 = workload(0.6, 2.0, scale);
    o.printf(
        Locale.ROOT,
        "%n== order: interactive 60%% / batch 40%% of arrivals, same rank, reserves 20%% + 20%%,"
            + " 2x for %.0f s; three servers, same arrivals ==%n",
        w1.duration().toMillis() / 1000.0);
    List<RunReport> order =
        Comparison.run(
            w1,
            Scenario.UPSTREAM,
            List.of(
                system(INTERACTIVE_FIRST, orderPolicy(false)),
                system(BATCH_FIRST, orderPolicy(true)),
                system(AGAIN, orderPolicy(false))),
            o,
            !quiet);
    md.append("### order: equal rank, listed both ways\n\n")
        .append(Tables.ttft(order))
        .append('\n')
        .append(orderVerdict(order))
        .append('\n')
        .append(Tables.summary(order))
        .append('\n')
        .append(Tables.rejections(order))
        .append('\n');

    md.append(
        slots(
            o,
            workload(0.5, 2.0, scale),
            "over",
            "1x each: both classes want more" + " than their slots"));
    md.append(
        slots(
            o,
            workload(0.25, 2.0, scale),
            "below",
            "interactive 0.5x (8 slots of" + " demand, below its 11), batch 1.5x"));

    o.println();
    o.println(md);
    Files.createDirectories(out);
    Path file = out.resolve("order.md");
    Files.writeString(file, md, StandardCharsets.UTF_8);
    o.println("tables: " + file);
    return 0;
  }

  /** One {@code slots} run: both listings, same arrivals; tables and the servers' queue metrics. */
  private String slots(PrintStream o, Workload w, String label, String what) throws Exception {
    o.printf(
        Locale.ROOT,
        "%n== slots (%s): maxRequests 16 binds (work capacity unlimited); interactive reserves"
            + " 70%% (11 slots), batch 10%% and borrows; %s; %.0f s ==%n",
        label,
        what,
        w.duration().toMillis() / 1000.0);
    Map<String, String> queues = new LinkedHashMap<>();
    List<RunReport> reports =
        Comparison.run(
            w,
            Scenario.UPSTREAM,
            List.of(
                system(INTERACTIVE_FIRST, slotsPolicy(false)),
                system(BATCH_FIRST, slotsPolicy(true))),
            o,
            !quiet,
            (name, server) -> queues.put(name, queueMetrics(name, server.registry())));
    StringBuilder md = new StringBuilder();
    md.append("### slots (")
        .append(label)
        .append("): maxRequests binding, interactive reserves 70 %; ")
        .append(what)
        .append("\n\n")
        .append(Tables.ttft(reports))
        .append('\n')
        .append(slotsVerdict(reports))
        .append('\n')
        .append(Tables.summary(reports))
        .append('\n')
        .append(Tables.rejections(reports))
        .append('\n')
        .append(Tables.refusalTimes(reports))
        .append('\n')
        .append(
            "| system | class | queued | predicted wait of the queued: mean | max |"
                + " left the queue admitted | expired (queue_timeout) | expired: longest wait |\n")
        .append("|---|---|---|---|---|---|---|---|\n");
    queues.values().forEach(md::append);
    return md.append('\n').toString();
  }

  /**
   * The server's own view of its queue, per class: how many were queued, the wait predicted for
   * them (none above the class's maxQueueWait, or it should have refused at once), and how they
   * left.
   */
  static String queueMetrics(String system, MeterRegistry registry) {
    StringBuilder b = new StringBuilder();
    for (String cls : List.of("interactive", "batch")) {
      Timer predicted = registry.find(MetricNames.QUEUE_WAIT_PREDICTED).tags("class", cls).timer();
      Timer admitted =
          registry.find(MetricNames.QUEUE_WAIT).tags("class", cls, "outcome", "admitted").timer();
      Timer expired =
          registry.find(MetricNames.QUEUE_WAIT).tags("class", cls, "outcome", "expired").timer();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %d | %s | %s | %d | %d | %s |\n",
              system,
              cls,
              predicted == null ? 0 : predicted.count(),
              predicted == null ? "-" : Tables.ms(predicted.mean(TimeUnit.MILLISECONDS)),
              predicted == null ? "-" : Tables.ms(predicted.max(TimeUnit.MILLISECONDS)),
              admitted == null ? 0 : admitted.count(),
              expired == null ? 0 : expired.count(),
              expired == null ? "-" : Tables.ms(expired.max(TimeUnit.MILLISECONDS))));
    }
    return b.toString();
  }

  private static Comparison.System system(String name, String yaml) {
    return new Comparison.System(name, ConfigLoader.parse(yaml), 3000, Map.of());
  }

  private static long served(RunReport r, String cls) {
    RunReport.Split s = r.byClass().get(cls);
    return s == null ? 0 : s.completed();
  }

  private static RunReport named(List<RunReport> reports, String system) {
    return reports.stream().filter(r -> r.system().equals(system)).findFirst().orElseThrow();
  }

  /**
   * Served per class in both orders, the difference the order makes, and the difference between the
   * two identical listings (the noise).
   */
  static String orderVerdict(List<RunReport> reports) {
    RunReport a = named(reports, INTERACTIVE_FIRST);
    RunReport b = named(reports, BATCH_FIRST);
    RunReport again = named(reports, AGAIN);
    List<String> lines = new ArrayList<>();
    for (String cls : List.of("interactive", "batch")) {
      lines.add(
          String.format(
              Locale.ROOT,
              "served %s: %d interactive first, %d batch first (order: %+d), %d interactive first"
                  + " again (noise: %+d)",
              cls,
              served(a, cls),
              served(b, cls),
              served(b, cls) - served(a, cls),
              served(again, cls),
              served(again, cls) - served(a, cls)));
    }
    return String.join("\n", lines) + "\n";
  }

  /** Interactive's share of the completions against its 11 guaranteed slots of 16. */
  static String slotsVerdict(List<RunReport> reports) {
    StringBuilder b = new StringBuilder();
    for (RunReport r : reports) {
      long i = served(r, "interactive");
      long all = i + served(r, "batch");
      RunReport.Split is = r.byClass().get("interactive");
      long queueTimeouts = r.refusals().byReason().getOrDefault("queue_timeout", 0L);
      long atOnce = r.refusals().byReason().getOrDefault("deadline_unreachable", 0L);
      b.append(
          String.format(
              Locale.ROOT,
              "%s: interactive %d of %d completions (%.0f%%; its guaranteed slots: 11 of 16 ="
                  + " 69%%), %d of its %d requests served; refused attempts: at once"
                  + " (deadline_unreachable) %d, after a hold (queue_timeout) %d%n",
              r.system(),
              i,
              all,
              all == 0 ? 0 : 100.0 * i / all,
              i,
              is == null ? 0 : is.offered(),
              atOnce,
              queueTimeouts));
    }
    return b.toString();
  }
}
