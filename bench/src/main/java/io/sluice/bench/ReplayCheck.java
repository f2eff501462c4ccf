package io.sluice.bench;

import io.sluice.bootstrap.replay.Replays;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code replay-check} bench (docs/replay.md, "Fidelity"): runs bench scenarios live with the
 * decision log's file on, then replays each run's records against its own policy (self-consistency:
 * agreement with the recorded decisions, predicted against recorded goodput), and replays the
 * {@code classes} run recorded under policy A against a policy B that is also run live on the same
 * arrivals (prediction: predicted against actual goodput per class). Writes {@code
 * replay-check.md}.
 *
 * <pre>java -jar bench/target/sluice-bench.jar replay-check [--scale 1.0] [--out DIR]</pre>
 */
@Command(
    name = "replay-check",
    description =
        "Replay fidelity: stepped, classes and noisy run live with decisionLog.file on; each run"
            + " replayed against its own policy (agreement, goodput) and the classes run recorded"
            + " under reservedShare 0.7 replayed under 0.5 beside a live run of 0.5.")
final class ReplayCheck implements Callable<Integer> {
  /** The prediction's policy change: interactive's reservedShare 0.7 -> 0.5. */
  static final String RESERVE_A = "reservedShare: 0.7";

  static final String RESERVE_B = "reservedShare: 0.5";

  @Option(
      names = "--scale",
      defaultValue = "1.0",
      description = "multiply every phase duration (default: ${DEFAULT-VALUE})")
  double scale = 1.0;

  @Option(
      names = "--out",
      defaultValue = "bench-results/replay",
      description = "directory for records and replay-check.md (default: ${DEFAULT-VALUE})")
  Path out = Path.of("bench-results", "replay");

  @Option(
      names = "--wall-clock",
      description =
          "record the runs live over gRPC through the emulated Envoy on the wall clock (default:"
              + " on a virtual clock, deterministic, whatever the machine's load)")
  boolean wallClock;

  @Option(
      names = "--scenarios",
      split = ",",
      defaultValue = "stepped,classes,noisy",
      description = "scenarios to record and replay (default: ${DEFAULT-VALUE})")
  List<String> scenarios = new ArrayList<>(List.of("stepped", "classes", "noisy"));

  /** One self-consistency row. */
  record Fidelity(String scenario, Replays.Result result) {
    double goodputError() {
      long rec = result.recordedGoodput();
      return rec == 0 ? 0 : Math.abs(result.goodput() - rec) / (double) rec;
    }

    boolean holds() {
      return result.agreement() >= 0.95 && goodputError() <= 0.05;
    }
  }

  /** The prediction: B replayed over A's records, B's own records from its live run. */
  record Prediction(Replays.Result predicted, Replays.Result actual) {}

  @Override
  public Integer call() throws Exception {
    Files.createDirectories(out);
    List<Fidelity> rows = new ArrayList<>();
    @Nullable Prediction prediction = null;
    for (String name : scenarios) {
      Scenario s = Scenario.named(name).scaled(scale);
      String yamlA = s.queueHoldYaml();
      double knee = s.upstream().batchSlots();
      if (name.equals("classes")) {
        String yamlB = yamlA.replaceFirst(RESERVE_A, RESERVE_B);
        Map<String, Path> files = recordRuns(s, Map.of("A", yamlA, "B", yamlB), System.out);
        rows.add(new Fidelity(name, replay(Objects.requireNonNull(files.get("A")), yamlA, knee)));
        prediction =
            new Prediction(
                replay(Objects.requireNonNull(files.get("A")), yamlB, knee),
                replay(Objects.requireNonNull(files.get("B")), yamlB, knee));
      } else {
        Map<String, Path> files = recordRuns(s, Map.of("A", yamlA), System.out);
        rows.add(new Fidelity(name, replay(Objects.requireNonNull(files.get("A")), yamlA, knee)));
      }
    }
    String md = table(rows, prediction);
    System.out.println(md);
    Files.writeString(out.resolve("replay-check.md"), md, StandardCharsets.UTF_8);
    System.out.println("wrote " + out.resolve("replay-check.md"));
    return rows.stream().allMatch(Fidelity::holds) ? 0 : 1;
  }

  Map<String, Path> recordRuns(Scenario s, Map<String, String> policies, PrintStream log)
      throws IOException, InterruptedException {
    return wallClock ? record(s, policies, log) : VirtualRuns.record(s, policies, out, log);
  }

  /**
   * Runs {@code s} live once per policy (the same arrivals each), every server writing its records
   * to its own file; returns the files by policy name. On a shared machine the load generator and
   * the emulated Envoy starve: read these with care ({@link VirtualRuns} does not).
   */
  Map<String, Path> record(Scenario s, Map<String, String> policies, PrintStream log)
      throws IOException, InterruptedException {
    Path dir = out.resolve("records");
    Files.createDirectories(dir);
    List<Comparison.System> systems = new ArrayList<>();
    Map<String, Path> files = new java.util.TreeMap<>();
    for (Map.Entry<String, String> p : new java.util.TreeMap<>(policies).entrySet()) {
      Path f = dir.resolve(s.name() + "-" + p.getKey() + ".jsonl");
      Files.deleteIfExists(f);
      files.put(p.getKey(), f);
      systems.add(
          new Comparison.System(
              p.getKey(), ConfigLoader.parse(withFile(p.getValue(), f)), s.holdMillis(), Map.of()));
    }
    log.printf(
        Locale.ROOT,
        "recording %s (%.0f s of arrivals) under %s%n",
        s.name(),
        s.workload().duration().toMillis() / 1000.0,
        files.keySet());
    Comparison.run(s.workload(), s.upstream(), systems, log, false);
    return files;
  }

  /** {@code yaml} with every decision written, to {@code file} (the logger at trace: off). */
  static String withFile(String yaml, Path file) {
    String on =
        "decisionLog: {enabled: true, level: trace, sampleRate: 1.0, alwaysLogRejects: true,"
            + " maxAdmittedPerSecond: 0, maxRefusedPerSecond: 0,"
            + " file: {path: '"
            + file.toAbsolutePath()
            + "', maxBytes: 1073741824, maxAge: 24h, maxFiles: 4}}";
    String patched = yaml.replace("decisionLog: {enabled: false}", on);
    if (patched.equals(yaml)) {
      throw new IllegalStateException("bench policy changed shape: no decisionLog line");
    }
    return patched;
  }

  static Replays.Result replay(Path records, String yaml, double knee) throws IOException {
    SluiceConfig policy = ConfigLoader.parse(yaml);
    return Replays.run(List.of(records), policy, knee);
  }

  static String table(List<Fidelity> rows, @Nullable Prediction p) {
    StringBuilder b = new StringBuilder();
    b.append("#### Self-consistency: each run replayed against its own policy\n\n")
        .append("| scenario | records | agreement | wait error mean (ms) | recorded goodput |")
        .append(" predicted goodput | goodput error | holds (>= 95 %, <= 5 %) |\n")
        .append("|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (Fidelity f : rows) {
      Replays.Result r = f.result();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %.1f %% | %.0f | %d | %d | %.1f %% | %s |%n",
              f.scenario(),
              r.replayed(),
              100 * r.agreement(),
              r.meanWaitErrorMillis(),
              r.recordedGoodput(),
              r.goodput(),
              100 * f.goodputError(),
              f.holds() ? "yes" : "no"));
    }
    b.append('\n');
    for (Fidelity f : rows) {
      if (!f.result().disagreements().isEmpty()) {
        b.append("- ")
            .append(f.scenario())
            .append(" disagreements (recorded -> replayed): ")
            .append(new java.util.TreeMap<>(f.result().disagreements()))
            .append("; first: ")
            .append(f.result().firstDisagreement())
            .append('\n');
      }
    }
    if (p != null) {
      b.append("\n#### Prediction: classes recorded under interactive ")
          .append(RESERVE_A)
          .append(", replayed under ")
          .append(RESERVE_B)
          .append(", beside a live run of ")
          .append(RESERVE_B)
          .append(" on the same arrivals\n\n")
          .append("| class | arrivals | goodput under A (recorded) | B predicted (replay) |")
          .append(" B actual (live) | error |\n|---|---:|---:|---:|---:|---:|\n");
      Map<String, long[]> actual = p.actual().classes();
      p.predicted()
          .classes()
          .forEach(
              (cls, v) -> {
                long[] a = actual.getOrDefault(cls, new long[3]);
                b.append(
                    String.format(
                        Locale.ROOT,
                        "| %s | %d | %d | %d | %d | %.1f %% |%n",
                        cls,
                        v[0],
                        v[1],
                        v[2],
                        a[1],
                        a[1] == 0 ? 0 : 100.0 * Math.abs(v[2] - a[1]) / a[1]));
              });
      b.append(
          String.format(
              Locale.ROOT,
              "| total | %d | %d | %d | %d | %.1f %% |%n",
              p.predicted().replayed(),
              p.predicted().recordedGoodput(),
              p.predicted().goodput(),
              p.actual().recordedGoodput(),
              p.actual().recordedGoodput() == 0
                  ? 0
                  : 100.0
                      * Math.abs(p.predicted().goodput() - p.actual().recordedGoodput())
                      / p.actual().recordedGoodput()));
    }
    return b.toString();
  }
}
