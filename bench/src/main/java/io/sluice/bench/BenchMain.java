package io.sluice.bench;

import io.sluice.harness.LoadGenerator;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ScopeType;

/**
 * {@code java -jar bench/target/sluice-bench.jar
 * [demo|scenario|order|probe|floor|heap|rls|flood|coldstart|replicas|restart|knee|throttle|cold-throttle|cold-knee|reserve|policy-assistant|calibrate-sim|rapid-reset|intake-burst]}.
 * With no subcommand it prints the usage (exit 2, picocli's usage-error code); {@code -h}/{@code
 * --help} and {@code -V}/{@code --version} are inherited by every subcommand.
 */
@Command(
    name = "sluice-bench",
    mixinStandardHelpOptions = true,
    scope = ScopeType.INHERIT,
    versionProvider = BenchMain.Version.class,
    description = "Sluice demo, smoke test and benchmarks (loopback only, except probe's target).",
    subcommands = {
      BenchMain.Demo.class,
      BenchMain.RunScenario.class,
      ClassOrder.class,
      Probe.class,
      Floor.class,
      HeapPerQueuedItem.class,
      RlsBench.class,
      Flood.class,
      ColdStart.class,
      Replicas.class,
      Restart.class,
      Knee.class,
      Throttle.class,
      ColdAdaptive.ColdThrottle.class,
      ColdKnee.class,
      RetryStorm.class,
      BudgetBench.Burst.class,
      BudgetBench.Pacing.class,
      BudgetReplicas.class,
      Reserve.class,
      ColdGreedy.class,
      PolicyAssistant.class,
      CalibrateSim.class,
      RapidReset.class,
      IntakeBurst.class,
      ReplayCheck.class,
      ReplayScale.class,
      PermitsBench.class
    })
public final class BenchMain {

  public static void main(String[] args) {
    System.setProperty("java.awt.headless", "true");
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.exit(commandLine().execute(args));
  }

  /** The command line with every subcommand (no subcommand: usage on stderr, exit 2). */
  static CommandLine commandLine() {
    return new CommandLine(new BenchMain());
  }

  /** The version of the Sluice build the jar holds (the server's version resource). */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
      Properties p = new Properties();
      try (InputStream in = BenchMain.class.getResourceAsStream("/io/sluice/version.properties")) {
        if (in != null) {
          p.load(in);
        }
      }
      return new String[] {"sluice-bench " + p.getProperty("version", "unknown")};
    }
  }

  /** The one-minute overload demo: no admission vs Sluice on its embedded default. */
  @Command(name = "demo", description = "Overload demo: with and without Sluice, live progress.")
  static final class Demo implements Callable<Integer> {
    @Option(
        names = "--duration",
        description = "arrival time in seconds (default: ${DEFAULT-VALUE})",
        defaultValue = "60")
    int durationSeconds = 60;

    @Option(
        names = "--out",
        description =
            "directory for the chart (default: ${DEFAULT-VALUE}, under the working directory)",
        defaultValue = "target/sluice-demo")
    Path out = Path.of("target/sluice-demo");

    @Option(names = "--chart", description = "PNG file to write instead of <out>/sluice-demo.png")
    @Nullable Path chart;

    @Override
    public Integer call() throws Exception {
      PrintStream out = System.out;
      Workload w = demoWorkload(durationSeconds);
      double cap = io.sluice.harness.LoadGenerator.capacityPerSecond(w, Scenario.UPSTREAM);
      out.printf(
          Locale.ROOT,
          "sluice demo: simulated LLM (K=%d slots, capacity ~%.1f req/s), emulated Envoy, Sluice"
              + " on its embedded default policy (queue-hold on via x-sluice-max-message-timeout-ms)."
              + "%nOffered: 0.7x for %ds, 3x for %ds, 0.7x for %ds; 8 s client deadline;"
              + " clients retry once after Retry-After.%n"
              + "Live lines count requests, not attempts: offered = admitted (reached the model)"
              + " + refused (finally) + waiting (held, or waiting to retry) + unserved (deadline"
              + " or hang-up before reaching the model, errors); refused attempts include"
              + " retries.%n%n",
          Scenario.UPSTREAM.batchSlots(),
          cap,
          w.phases().get(0).duration().toSeconds(),
          w.phases().get(1).duration().toSeconds(),
          w.phases().get(2).duration().toSeconds());
      List<Comparison.System> systems =
          List.of(
              new Comparison.System("no admission", null, 0, Map.of()),
              new Comparison.System(
                  "sluice",
                  Policies.embeddedDefaultOnFreePorts(),
                  3000,
                  Map.of("x-sluice-max-message-timeout-ms", "3000")));
      List<RunReport> reports = Comparison.run(w, Scenario.UPSTREAM, systems, out, true);
      out.println();
      out.println(Tables.summary(reports));
      out.println(Tables.ttft(reports));
      out.println(Tables.rejections(reports));
      LoadGenerator.ServedOnArrival floor =
          LoadGenerator.wasteIfServedOnArrival(w, Scenario.UPSTREAM);
      out.println(Tables.waste(reports, floor));
      out.println(Tables.wasteVerdict(reports, floor));
      Path png =
          Charts.timeline(
              reports, "sluice demo", chart != null ? chart : this.out.resolve("sluice-demo.png"));
      out.println("chart: " + png);
      return 0;
    }
  }

  static Workload demoWorkload(int durationSeconds) {
    // Larger prompts than the scenarios so that the part of Sluice's default pool that interactive
    // may use (32768 work units minus agent's 15% guaranteed share = 27853) holds about K = 16 of
    // them: 900–2300 prompt tokens + 160 reserved output ≈ 1760 work units.
    Workload.RequestClass chat =
        Workload.RequestClass.of(
            "chat",
            null,
            "/v1/chat/completions",
            1,
            900,
            2300,
            40,
            160,
            Duration.ofSeconds(8),
            Duration.ofSeconds(2));
    List<Workload.Tenant> tenants =
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1));
    Workload probe =
        Workload.of(
            List.of(chat),
            tenants,
            List.of(new Workload.Phase("p", Duration.ofSeconds(1), 1)),
            0,
            Duration.ZERO,
            Duration.ZERO,
            1,
            Duration.ofSeconds(9),
            7);
    double cap = io.sluice.harness.LoadGenerator.capacityPerSecond(probe, Scenario.UPSTREAM);
    long total = Math.max(3, durationSeconds);
    long edge = Math.max(1, Math.round(total * 0.15));
    long middle = Math.max(1, total - 2 * edge);
    return Workload.of(
        List.of(chat),
        tenants,
        List.of(
            new Workload.Phase("0.7x", Duration.ofSeconds(edge), 0.7 * cap),
            new Workload.Phase("3x", Duration.ofSeconds(middle), 3 * cap),
            new Workload.Phase("0.7x again", Duration.ofSeconds(edge), 0.7 * cap)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        1,
        Duration.ofSeconds(9),
        7);
  }

  /** One scenario (or all) against no admission, a concurrency cap and Sluice. */
  @Command(
      name = "scenario",
      description =
          "Run a benchmark scenario (or all) against no admission, a concurrency cap and Sluice.")
  static final class RunScenario implements Callable<Integer> {
    @Parameters(
        index = "0",
        arity = "0..1",
        paramLabel = "<name>",
        completionCandidates = ScenarioNames.class,
        description = "${COMPLETION-CANDIDATES} or all (default: ${DEFAULT-VALUE})",
        defaultValue = "all")
    String name = "all";

    @Option(
        names = "--scale",
        description = "multiply every phase duration (default: ${DEFAULT-VALUE})",
        defaultValue = "1.0")
    double scale = 1.0;

    @Option(
        names = "--out",
        description = "directory for PNG charts and markdown tables (default: ${DEFAULT-VALUE})",
        defaultValue = "bench-results")
    Path out = Path.of("bench-results");

    @Option(names = "--quiet", description = "no live progress lines")
    boolean quiet;

    @Override
    public Integer call() throws Exception {
      List<Scenario> scenarios =
          name.equals("all") ? Scenario.all() : List.of(Scenario.named(name));
      Files.createDirectories(out);
      for (Scenario s : scenarios) {
        runOne(s.scaled(scale), out, System.out, !quiet);
      }
      return 0;
    }
  }

  /** The scenario names, for the usage help. */
  static final class ScenarioNames implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return Scenario.all().stream().map(Scenario::name).iterator();
    }
  }

  static List<RunReport> runOne(Scenario s, Path outDir, PrintStream out, boolean live)
      throws Exception {
    double cap = s.capacityPerSecond();
    out.printf(
        Locale.ROOT,
        "%n== scenario %s: %s (capacity ~%.1f req/s, %.0f s of arrivals) ==%n",
        s.name(),
        s.title(),
        cap,
        s.workload().duration().toMillis() / 1000.0);
    List<RunReport> reports =
        Comparison.run(s.workload(), s.upstream(), Comparison.standard(s), out, live);
    StringBuilder md = new StringBuilder();
    md.append("### ")
        .append(s.name())
        .append(": ")
        .append(s.title())
        .append(String.format(Locale.ROOT, "%n%nUpstream capacity ~%.1f requests/s.%n%n", cap));
    md.append(Tables.summary(reports)).append('\n');
    LoadGenerator.ServedOnArrival floor =
        LoadGenerator.wasteIfServedOnArrival(s.workload(), s.upstream());
    md.append(Tables.waste(reports, floor)).append('\n');
    md.append(Tables.wasteVerdict(reports, floor)).append('\n');
    md.append(Tables.phases(reports, cap)).append('\n');
    md.append(Tables.ttft(reports)).append('\n');
    md.append(Tables.rejections(reports)).append('\n');
    if (s.workload().tenants().size() > 1) {
      md.append(Tables.tenants(reports)).append('\n');
    }
    out.println(md);
    if (outDir != null) {
      Files.createDirectories(outDir);
      Files.writeString(outDir.resolve(s.name() + ".md"), md, StandardCharsets.UTF_8);
      List<Path> charts = new ArrayList<>();
      charts.add(Charts.timeline(reports, s.name(), outDir.resolve(s.name() + "-timeline.png")));
      if (s.name().equals("stepped")) {
        charts.add(Charts.goodputVsOffered(reports, cap, outDir.resolve("goodput-vs-offered.png")));
      }
      if (s.workload().classes().size() > 1) {
        charts.add(Charts.ttftByClass(reports, outDir.resolve("ttft-by-class.png")));
      }
      charts.add(
          Charts.rejections(reports, s.name(), outDir.resolve(s.name() + "-rejections.png")));
      charts.forEach(p -> out.println("chart: " + p));
    }
    return reports;
  }
}
