package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.emulator.FilterConfig;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;

/**
 * Runs one workload against several systems at the same time, each with its own simulated upstream
 * (same settings, same seed, so the same arrivals): no admission, and one emulated Envoy per Sluice
 * policy. Prints a live line per second.
 */
final class Comparison {
  /** A system to compare: a name and a Sluice policy (null = no admission). */
  record System(
      String name, @Nullable SluiceConfig policy, long holdMillis, Map<String, String> metadata) {}

  private Comparison() {}

  static List<System> standard(Scenario s) {
    return List.of(
        new System("no admission", null, 0, Map.of()),
        new System("concurrency cap", ConfigLoader.parse(s.concurrencyCapYaml()), 0, Map.of()),
        new System("sluice", ConfigLoader.parse(s.queueHoldYaml()), s.holdMillis(), Map.of()));
  }

  static List<RunReport> run(
      Workload workload,
      SimulatedLlmUpstream.Settings upstream,
      List<System> systems,
      PrintStream out,
      boolean live)
      throws IOException, InterruptedException {
    return run(workload, upstream, systems, out, live, (name, server) -> {});
  }

  /**
   * As {@link #run(Workload, SimulatedLlmUpstream.Settings, List, PrintStream, boolean)}; {@code
   * afterRun} sees each Sluice server (by system name) once the load has finished, before it stops
   * (to read its metrics).
   */
  static List<RunReport> run(
      Workload workload,
      SimulatedLlmUpstream.Settings upstream,
      List<System> systems,
      PrintStream out,
      boolean live,
      java.util.function.BiConsumer<String, SluiceServer> afterRun)
      throws IOException, InterruptedException {
    Map<String, SluiceServer> byName = new java.util.LinkedHashMap<>();
    List<SluiceServer> servers = new ArrayList<>();
    List<Rig> rigs = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(systems.size());
    Map<String, LoadGenerator.Progress> latest = new ConcurrentHashMap<>();
    try {
      for (System sys : systems) {
        if (sys.policy() == null) {
          rigs.add(Rig.noAdmission(sys.name(), upstream));
          continue;
        }
        SluiceServer server = SluiceServer.start(sys.policy());
        servers.add(server);
        byName.put(sys.name(), server);
        FilterConfig filter =
            Rig.benchFilter().maxMessageTimeout(Duration.ofMillis(sys.holdMillis())).build();
        rigs.add(
            Rig.extProc(
                sys.name(), "127.0.0.1:" + server.grpcPort(), filter, upstream, sys.metadata()));
      }
      String watched = systems.get(systems.size() - 1).name();
      List<Future<RunReport>> futures = new ArrayList<>();
      for (Rig rig : rigs) {
        futures.add(
            pool.submit(
                () ->
                    new LoadGenerator(workload)
                        .run(
                            rig,
                            p -> {
                              latest.put(rig.name(), p);
                              if (live && rig.name().equals(watched)) {
                                out.println(progressLine(p, latest, watched));
                              }
                            })));
      }
      List<RunReport> reports = new ArrayList<>();
      for (Future<RunReport> f : futures) {
        try {
          reports.add(f.get());
        } catch (java.util.concurrent.ExecutionException e) {
          throw new IllegalStateException("load generator failed", e.getCause());
        }
      }
      byName.forEach(afterRun);
      return reports;
    } finally {
      pool.shutdownNow();
      rigs.forEach(Rig::close);
      servers.forEach(SluiceServer::close);
    }
  }

  /**
   * One live line: logical requests, so {@code offered = admitted + refused + waiting + unserved};
   * refused attempts (retries included) are shown apart.
   */
  static String progressLine(
      LoadGenerator.Progress p, Map<String, LoadGenerator.Progress> all, String watched) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "[%3ds] %s: offered %5d = admitted %5d + refused %5d + waiting %4d + unserved %4d"
                    + " | goodput %5d | refused attempts %5d | upstream active %3d",
                p.second(),
                watched,
                p.offered(),
                p.admitted(),
                p.refused(),
                p.waiting(),
                p.unserved(),
                p.completed(),
                p.refusedAttempts(),
                p.upstreamActive()));
    all.forEach(
        (name, q) -> {
          if (!name.equals(watched)) {
            b.append(String.format(Locale.ROOT, " | %s goodput %d", name, q.completed()));
          }
        });
    return b.toString();
  }
}
