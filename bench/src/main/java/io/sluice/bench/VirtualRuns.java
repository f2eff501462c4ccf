package io.sluice.bench;

import io.sluice.bootstrap.replay.RecordedRun;
import io.sluice.config.ConfigLoader;
import io.sluice.harness.Arrivals;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code replay-check}'s recorded runs on a virtual clock ({@link RecordedRun}): a scenario's
 * arrivals (the same seed as its live run: the same requests, bodies and client deadlines), the
 * real admission core of each policy, the simulated upstream's token-step model, every decision
 * record written to a file per policy. Deterministic: the machine's load changes nothing.
 */
final class VirtualRuns {
  private VirtualRuns() {}

  /** The scenario's arrivals as a recorded run sends them (pool llm, route chat). */
  @SuppressWarnings("NullAway") // a class with no sluice class is recorded with none, as before
  static List<RecordedRun.Arrival> arrivals(Scenario s) {
    SimulatedLlmUpstream.Settings up = s.upstream();
    List<RecordedRun.Arrival> out = new ArrayList<>();
    for (Arrivals.Arrival a : Arrivals.arrivals(s.workload())) {
      byte[] body = Arrivals.body(a.promptTokens(), a.outputTokens(), a.maxTokens());
      int output = Math.min(a.outputTokens(), Math.min(a.maxTokens(), up.maxOutputTokens()));
      out.add(
          new RecordedRun.Arrival(
              a.atNanos(),
              "chat",
              "llm",
              a.requestClass().sluiceClass(),
              a.tenant().name(),
              new String(body, StandardCharsets.UTF_8),
              SimulatedLlmUpstream.promptTokens(body.length, up),
              output,
              a.requestClass().deadline().toNanos(),
              a.cancelAfterNanos()));
    }
    return out;
  }

  /** The simulated upstream's model: K slots, prefill and decode per token. */
  static RecordedRun.Model model(SimulatedLlmUpstream.Settings up) {
    return new RecordedRun.Model(
        up.batchSlots(), up.prefillPerInputToken().toNanos(), up.decodePerOutputToken().toNanos());
  }

  /** Runs {@code s} once per policy; returns each run's records file by policy name. */
  static Map<String, Path> record(
      Scenario s, Map<String, String> policies, Path out, PrintStream log) throws IOException {
    Path dir = out.resolve("records");
    Files.createDirectories(dir);
    List<RecordedRun.Arrival> arrivals = arrivals(s);
    Map<String, Path> files = new TreeMap<>();
    for (Map.Entry<String, String> p : new TreeMap<>(policies).entrySet()) {
      Path f = dir.resolve(s.name() + "-" + p.getKey() + ".jsonl");
      long t0 = System.nanoTime();
      long[] n;
      try (BufferedWriter w = Files.newBufferedWriter(f, StandardCharsets.UTF_8)) {
        n =
            RecordedRun.run(
                ConfigLoader.parse(p.getValue()),
                arrivals,
                model(s.upstream()),
                s.workload().maxRetries(),
                line -> {
                  try {
                    w.write(line);
                    w.newLine();
                  } catch (IOException e) {
                    throw new UncheckedIOException(e);
                  }
                });
      }
      log.printf(
          Locale.ROOT,
          "recorded %s under %s on a virtual clock: %d arrivals, %d served, %d refused, %d retries"
              + " (in %.1f s)%n",
          s.name(),
          p.getKey(),
          arrivals.size(),
          n[0],
          n[1],
          n[2],
          (System.nanoTime() - t0) / 1e9);
      files.put(p.getKey(), f);
    }
    return files;
  }
}
