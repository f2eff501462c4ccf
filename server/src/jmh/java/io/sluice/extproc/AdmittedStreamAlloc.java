package io.sluice.extproc;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Every allocation of {@link ExtProcStreamBenchmark#admittedStream} (or, with {@code llm}, of
 * {@code envoyStream}), by site, not sampled: run with {@code -XX:-UseTLAB -XX:+UseG1GC}, so that
 * each allocation the compiled code makes is a {@code jdk.ObjectAllocationOutsideTLAB} event with
 * its stack (escape analysis still removes what it removes under JMH). After 400,000 streams to
 * warm up, {@code ops} streams are recorded; prints the thread's allocated bytes per stream (the
 * plain loop's, then the recording's) and each site's bytes and objects per stream: the type, the
 * first frame outside Sluice and up to {@code depth} Sluice frames. The decision log's records are
 * rate-limited per second, so in the slower recorded loop they weigh more than under JMH.
 *
 * <pre>
 * java -XX:+UseG1GC -XX:-UseTLAB -cp server/target/benchmarks.jar \
 *   io.sluice.extproc.AdmittedStreamAlloc [llm] [ops=10000] [depth=4]
 * </pre>
 *
 * A jar built before this class: compile it and {@link AdmittedStreamCpu} against this one's jar
 * and put them first on the path (docs/benchmarks/request-path-history.md, "Admitted stream since
 * 2026-12-03, by part").
 */
public final class AdmittedStreamAlloc {
  private AdmittedStreamAlloc() {}

  public static void main(String[] args) throws Exception {
    boolean llm = args.length > 0 && args[0].equals("llm");
    int ops = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    int depth = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    ExtProcStreamBenchmark b = new ExtProcStreamBenchmark();
    b.setUp();
    Blackhole bh = AdmittedStreamCpu.blackhole();
    for (int i = 0; i < 300_000; i++) {
      run(b, bh, llm);
    }
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long t0 = mx.getCurrentThreadAllocatedBytes();
    for (int i = 0; i < 100_000; i++) {
      run(b, bh, llm);
    }
    long plain = (mx.getCurrentThreadAllocatedBytes() - t0) / 100_000;
    Path file = Files.createTempFile("admitted-stream-alloc", ".jfr");
    long recorded;
    try (Recording r = new Recording()) {
      r.enable("jdk.ObjectAllocationOutsideTLAB").withStackTrace();
      r.start();
      long a0 = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < ops; i++) {
        run(b, bh, llm);
      }
      recorded = (mx.getCurrentThreadAllocatedBytes() - a0) / ops;
      r.stop();
      r.dump(file);
    } finally {
      b.tearDown();
    }
    String me = Thread.currentThread().getName();
    Map<String, long[]> bySite = new HashMap<>();
    long total = 0;
    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
      if (e.getThread() == null || !me.equals(e.getThread().getJavaName())) {
        continue;
      }
      long size = e.getLong("allocationSize");
      total += size;
      long[] v = bySite.computeIfAbsent(site(e, depth), x -> new long[2]);
      v[0] += size;
      v[1]++;
    }
    Files.delete(file);
    System.out.printf(
        "thread allocated B/op: %d (plain loop, 100k), %d (in the recording); events B/op %.1f%n",
        plain, recorded, (double) total / ops);
    bySite.entrySet().stream()
        .sorted((x, y) -> Long.compare(y.getValue()[0], x.getValue()[0]))
        .forEach(
            s ->
                System.out.printf(
                    "%7.1f B %5.2f #  %s%n",
                    (double) s.getValue()[0] / ops, (double) s.getValue()[1] / ops, s.getKey()));
    System.exit(0);
  }

  /** The type, the first frame outside Sluice (a JDK or library call), then Sluice's frames. */
  private static String site(RecordedEvent e, int depth) {
    StringBuilder k = new StringBuilder(e.getClass("objectClass").getName()).append(" <-");
    List<RecordedFrame> frames =
        e.getStackTrace() == null ? List.of() : e.getStackTrace().getFrames();
    int shown = 0;
    boolean sluice = false;
    for (RecordedFrame f : frames) {
      String c = f.getMethod().getType().getName();
      if (c.startsWith(AdmittedStreamAlloc.class.getName())) {
        break;
      }
      String at = c.substring(c.lastIndexOf('.') + 1) + "." + f.getMethod().getName();
      if (!sluice && !c.startsWith("io.sluice")) {
        if (shown == 0) {
          k.append(' ').append(at);
          shown++;
        }
        continue;
      }
      sluice = true;
      k.append(' ').append(at).append(':').append(f.getLineNumber());
      if (++shown >= depth) {
        break;
      }
    }
    return k.toString();
  }

  private static void run(ExtProcStreamBenchmark b, Blackhole bh, boolean llm) throws Exception {
    AdmittedStreamCpu.run(b, bh, llm);
  }
}
