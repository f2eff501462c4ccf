package io.sluice.harness;

import io.sluice.upstream.SimulatedLlmUpstream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Diagnostics: when the system property {@code sluice.bench.trace} names a directory, every run
 * writes one CSV row per attempt there ({@code <rig>.csv}): arrival, start, reaching the upstream,
 * end, deadline, voluntary cancel time, sizes, outcome and tokens spent.
 */
final class AttemptTrace {
  private static final @Nullable String TRACE_DIR = System.getProperty("sluice.bench.trace");

  private final Map<String, Attempt> traced = new ConcurrentHashMap<>();

  /** A trace for one run, or null when tracing is off. */
  static @Nullable AttemptTrace ifEnabled() {
    return TRACE_DIR == null ? null : new AttemptTrace();
  }

  void put(String id, Attempt a) {
    traced.put(id, a);
  }

  @Nullable Attempt get(String id) {
    return traced.get(id);
  }

  /** One CSV row per attempt (times in ms since the run started), for waste analysis. */
  void write(Rig rig, RunTally tally, long orphanTokens) {
    StringBuilder b =
        new StringBuilder(
            "id,class,tenant,attempt,voluntary,arrival,start,upstream,end,deadline,cancelAt,"
                + "prompt,output,ending,ttfb,tokensAtEnd,tokensTotal\n");
    List<Attempt> all = new ArrayList<>(traced.values());
    all.sort((x, y) -> Long.compare(x.startNanos, y.startNanos));
    for (Attempt a : all) {
      Logical l = a.logical;
      b.append(a.id)
          .append(',')
          .append(l.requestClass.name())
          .append(',')
          .append(l.tenant.name())
          .append(',')
          .append(a.number)
          .append(',')
          .append(a.voluntary)
          .append(',')
          .append(tally.ms(l.arrivalNanos))
          .append(',')
          .append(tally.ms(a.startNanos))
          .append(',')
          .append(a.upstreamAtNanos < 0 ? "" : tally.ms(a.upstreamAtNanos))
          .append(',')
          .append(a.endNanos < 0 ? "" : tally.ms(a.endNanos))
          .append(',')
          .append(tally.ms(l.deadlineNanos))
          .append(',')
          .append(l.cancelAtNanos == Long.MAX_VALUE ? "" : tally.ms(l.cancelAtNanos))
          .append(',')
          .append(SimulatedLlmUpstream.promptTokens(l.body.length, rig.upstream().settings()))
          .append(',')
          .append(l.outputTokens)
          .append(',')
          .append(a.ending)
          .append(',')
          .append(a.ttfbNanos < 0 ? "" : a.ttfbNanos / 1_000_000)
          .append(',')
          .append(a.tokens.get())
          .append(',')
          .append(a.tokensTotal.get())
          .append('\n');
    }
    b.append("# orphanTokens=")
        .append(orphanTokens)
        .append(" promptSpent=")
        .append(rig.upstream().promptTokensSpent() - tally.promptSpent0())
        .append(" completionSpent=")
        .append(rig.upstream().completionTokensSpent() - tally.completionSpent0())
        .append('\n');
    try {
      java.nio.file.Path dir = java.nio.file.Path.of(TRACE_DIR);
      java.nio.file.Files.createDirectories(dir);
      java.nio.file.Files.writeString(
          dir.resolve(rig.name().replaceAll("[^A-Za-z0-9_.-]", "_") + ".csv"), b);
    } catch (java.io.IOException ex) {
      throw new java.io.UncheckedIOException(ex);
    }
  }
}
