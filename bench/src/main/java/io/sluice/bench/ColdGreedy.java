package io.sluice.bench;

import io.sluice.config.ConfigLoader;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.harness.Workload;
import io.sluice.upstream.HttpHeaders;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cold-greedy}: the learned output reserve from cold. A fresh server with no learned state,
 * the embedded default policy's class prior ({@code defaultOutputTokens}, {@code maxOutputTokens}
 * and learned-reserve settings as a new user gets them), offered {@code --load} times what the
 * upstream's batch slots serve from the first second: tenant {@code class:greedy} sends {@code
 * max_tokens: 4096}, tenant {@code class:honest} {@code max_tokens: 320}, both for answers of
 * 100–300 tokens, at the same rate. Goodput of greedy ÷ honest by arrival window (0–30 s, 60–90 s),
 * and the reserve each side's requests got per second (from {@code x-sluice-estimate}), charted.
 *
 * <pre>java -jar bench/target/sluice-bench.jar cold-greedy [--seconds 90] [--load 1.75]</pre>
 */
@Command(
    name = "cold-greedy",
    description =
        "Learned output reserve from cold: greedy clients (max_tokens 4096) beside honest ones"
            + " (max_tokens 320), answers 100-300, fresh server, offered 1.5-2x from the first"
            + " second; goodput greedy/honest over 0-30 s and 60-90 s, reserve over time.")
final class ColdGreedy implements Callable<Integer> {
  @Option(
      names = "--seconds",
      defaultValue = "90",
      description = "seconds of arrivals (default: ${DEFAULT-VALUE})")
  int seconds = 90;

  @Option(
      names = "--load",
      defaultValue = "1.75",
      description =
          "offered load as a multiple of what the upstream's batch slots serve at full speed"
              + " (default: ${DEFAULT-VALUE})")
  double load = 1.75;

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-cold-greedy",
      description = "directory for the markdown table (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-cold-greedy");

  @Option(
      names = "--chart",
      defaultValue = "docs/benchmarks/cold-greedy-reserve.png",
      description = "the reserve-over-time chart (default: ${DEFAULT-VALUE})")
  Path chart = Path.of("docs/benchmarks/cold-greedy-reserve.png");

  @Option(
      names = "--redis",
      defaultValue = "127.0.0.1:6379",
      description =
          "the store (BACKEND_TYPE=redis) the fresh run learns into and the restart run reads"
              + " from; when nothing answers there, both run in memory and the restart run is"
              + " skipped (default: ${DEFAULT-VALUE})")
  String redis = "127.0.0.1:6379";

  @Option(
      names = "--restart-seconds",
      defaultValue = "30",
      description =
          "seconds of the run after a restart (a new server on the same store; 0: none)"
              + " (default: ${DEFAULT-VALUE})")
  int restartSeconds = 30;

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final int GREEDY_CAP = 4096;
  static final int HONEST_CAP = 320;
  static final int K = Reserve.K;
  static final long HOLD_MILLIS = 10_000;

  /** One request's outcome as the bench keeps it. */
  record Seen(String group, long arrivalMillis, boolean completed, long reserve) {}

  /** Goodput of each side within an arrival window. */
  record Window(double from, double to, long greedy, long honest) {
    double ratio() {
      return honest == 0 ? Double.NaN : (double) greedy / honest;
    }
  }

  /** One run's result. */
  record Result(String name, List<Seen> seen, double seconds) {
    Window window(double from, double to) {
      long g = 0;
      long h = 0;
      for (Seen s : seen) {
        double t = s.arrivalMillis() / 1000.0;
        if (s.completed() && t >= from && t < to) {
          if (s.group().equals("greedy")) {
            g++;
          } else {
            h++;
          }
        }
      }
      return new Window(from, to, g, h);
    }

    /** Mean reserve per arrival second of one side's requests that carried an estimate. */
    double[][] reservePerSecond(String group) {
      int n = (int) Math.ceil(seconds);
      double[] sum = new double[n];
      int[] count = new int[n];
      for (Seen s : seen) {
        int sec = (int) (s.arrivalMillis() / 1000);
        if (s.group().equals(group) && s.reserve() >= 0 && sec < n) {
          sum[sec] += s.reserve();
          count[sec]++;
        }
      }
      List<double[]> pts = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        if (count[i] > 0) {
          pts.add(new double[] {i + 0.5, sum[i] / count[i]});
        }
      }
      double[][] xy = new double[2][pts.size()];
      for (int i = 0; i < pts.size(); i++) {
        xy[0][i] = pts.get(i)[0];
        xy[1][i] = pts.get(i)[1];
      }
      return xy;
    }
  }

  @Override
  public Integer call() throws Exception {
    if (seconds < 1 || !(load > 0)) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--seconds: at least 1; --load > 0");
    }
    boolean onRedis = BenchNet.reachable(redis);
    String prefix = "cold_greedy_" + Long.toHexString(System.nanoTime()) + "_";
    List<Result> results = new ArrayList<>();
    results.add(run("fresh", seconds, onRedis ? prefix : null, System.out));
    if (restartSeconds > 0 && onRedis) {
      results.add(run("after restart", restartSeconds, prefix, System.out));
    } else if (restartSeconds > 0) {
      System.out.println("no Redis at " + redis + ": the restart run is skipped");
    }
    String md = report(results);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("cold-greedy.md"), md, StandardCharsets.UTF_8);
    System.out.println("chart: " + chart(results, chart));
    return 0;
  }

  /** The embedded default policy's {@code interactive} class: what a new user's clients get. */
  static ClassPolicy defaultClass() {
    return Objects.requireNonNull(ConfigLoader.embeddedDefault().classes().get("interactive"));
  }

  /**
   * The policy: the reserve bench's pool (capacity sized for the real answers, K slots), one class
   * with the embedded default's output limits, the learned reserve at its defaults.
   */
  static String policy(@org.jspecify.annotations.Nullable String redisPrefix, String redis) {
    String p = policy();
    return redisPrefix == null ? p : ColdAdaptive.onRedis(p, redis, redisPrefix);
  }

  static String policy() {
    ClassPolicy d = defaultClass();
    String classes =
        String.format(
            Locale.ROOT,
            "  interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 20s,"
                + " maxQueueWait: 8s, defaultOutputTokens: %d, maxOutputTokens: %d}%n",
            d.defaultOutputTokens(),
            d.maxOutputTokens());
    return Policies.policy(Reserve.CAPACITY, K, HOLD_MILLIS, classes, "interactive")
        .replace(
            "responses: {decisionHeader: false, estimateHeader: false}",
            "responses: {decisionHeader: false, estimateHeader: true}");
  }

  static Workload.RequestClass side(String name, int cap) {
    return Workload.RequestClass.of(
            name,
            "interactive",
            "/v1/chat/completions",
            1.0,
            Reserve.PROMPT_MIN,
            Reserve.PROMPT_MAX,
            Reserve.ANSWER_MIN,
            Reserve.ANSWER_MAX,
            Duration.ofSeconds(20),
            Duration.ofSeconds(2))
        .withMaxTokens(cap, cap);
  }

  Workload workload(int seconds) {
    double service =
        Scenario.UPSTREAM.prefillPerInputToken().toNanos()
                / 1e9
                * (Reserve.PROMPT_MIN + Reserve.PROMPT_MAX)
                / 2
            + Scenario.UPSTREAM.decodePerOutputToken().toNanos()
                / 1e9
                * (Reserve.ANSWER_MIN + Reserve.ANSWER_MAX)
                / 2;
    double rate = load * K / service;
    return Workload.of(
        List.of(side("greedy", GREEDY_CAP), side("honest", HONEST_CAP)),
        List.of(new Workload.Tenant("class:greedy", 1), new Workload.Tenant("class:honest", 1)),
        List.of(new Workload.Phase("all", Duration.ofSeconds(seconds), rate)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        0,
        Duration.ofSeconds(25),
        31);
  }

  /**
   * One run on a fresh server: in memory ({@code redisPrefix} null) or on the Redis store under
   * {@code redisPrefix} (a server before it may have learned there).
   */
  Result run(
      String name,
      int seconds,
      @org.jspecify.annotations.Nullable String redisPrefix,
      PrintStream o)
      throws Exception {
    ClassPolicy d = defaultClass();
    o.printf(
        Locale.ROOT,
        "cold-greedy (%s): simulated LLM, K=%d slots; prompts %d-%d, answers %d-%d tokens;"
            + " greedy max_tokens %d, honest %d, same rate; embedded default class prior"
            + " (defaultOutputTokens %d, maxOutputTokens %d, reserveQuantile %.2f); pool %d work"
            + " units, maxRequests %d; offered %.2fx what K serve from the first second; %d s;"
            + " store %s.%n",
        name,
        K,
        Reserve.PROMPT_MIN,
        Reserve.PROMPT_MAX,
        Reserve.ANSWER_MIN,
        Reserve.ANSWER_MAX,
        GREEDY_CAP,
        HONEST_CAP,
        d.defaultOutputTokens(),
        d.maxOutputTokens(),
        d.reserveQuantile(),
        Reserve.CAPACITY,
        K,
        load,
        seconds,
        redisPrefix == null ? "memory" : "redis " + redis + " (" + redisPrefix + ")");
    ConcurrentLinkedQueue<Seen> seen = new ConcurrentLinkedQueue<>();
    AdaptiveRuns.run(
        "cold-greedy " + name,
        policy(redisPrefix, redis),
        K,
        workload(seconds),
        Scenario.UPSTREAM,
        HOLD_MILLIS,
        up -> {},
        List.of(),
        0,
        o,
        quiet,
        x ->
            seen.add(
                new Seen(
                    x.requestClass(),
                    x.arrivalMillis(),
                    x.ending().equals("completed"),
                    x.upstreamRequest().map(r -> outputReserve(r.headers())).orElse(-1L))),
        s -> {});
    return new Result(name, List.copyOf(seen), seconds);
  }

  /** The {@code output=} of {@code x-sluice-estimate}, or -1. */
  static long outputReserve(HttpHeaders h) {
    String v = h.first("x-sluice-estimate").orElse("");
    for (String part : v.split(";")) {
      String p = part.trim();
      if (p.startsWith("output=")) {
        try {
          return Long.parseLong(p.substring(7));
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
    return -1;
  }

  String report(List<Result> results) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | greedy/honest 0–30 s | 30–60 s | 60–90 s | completed greedy / honest (0–30 s)"
            + " | mean reserve greedy 0–5 s | 5–30 s | 60–90 s |\n");
    b.append("|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      Window a = r.window(0, 30);
      Window m = r.window(30, 60);
      Window z = r.window(60, 90);
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %s | %d / %d | %s | %s | %s |%n",
              r.name(),
              fmt(a.ratio()),
              fmt(m.ratio()),
              fmt(z.ratio()),
              a.greedy(),
              a.honest(),
              meanReserve(r, 0, 5),
              meanReserve(r, 5, 30),
              meanReserve(r, 60, 90)));
    }
    return b.toString();
  }

  private static String fmt(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.2f", v);
  }

  private static String meanReserve(Result r, double from, double to) {
    double sum = 0;
    int n = 0;
    for (Seen s : r.seen()) {
      double t = s.arrivalMillis() / 1000.0;
      if (s.group().equals("greedy") && s.reserve() >= 0 && t >= from && t < to) {
        sum += s.reserve();
        n++;
      }
    }
    return n == 0 ? "n/a" : String.format(Locale.ROOT, "%.0f", sum / n);
  }

  static Path chart(List<Result> results, Path file) throws java.io.IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(420)
            .title("cold-greedy: output reserve per request (mean per arrival second)")
            .xAxisTitle("time since the server started taking traffic (s)")
            .yAxisTitle("output tokens reserved")
            .build();
    c.getStyler().setMarkerSize(4);
    for (Result r : results) {
      for (String g : List.of("greedy", "honest")) {
        double[][] xy = r.reservePerSecond(g);
        if (xy[0].length > 0) {
          c.addSeries(
                  r.name() + ": " + g + " (max_tokens " + (g.equals("greedy") ? 4096 : 320) + ")",
                  xy[0],
                  xy[1])
              .setMarker(SeriesMarkers.CIRCLE);
        }
      }
    }
    return Charts.save(List.of(c), 1, 1, file);
  }
}
