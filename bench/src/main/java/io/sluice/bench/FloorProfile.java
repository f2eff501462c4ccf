package io.sluice.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;
import org.jspecify.annotations.Nullable;

/**
 * Reads a floor server's flight recording ({@code floor --separate --server-jvm-arg
 * -XX:StartFlightRecording=...,settings=profile}) and prints where its CPU samples and allocation
 * samples fall, by part: each sample goes to the innermost frame that is Sluice's ({@code
 * io.sluice.<package>}), else grpc's, else Netty's (the transport), else the JDK's; and,
 * separately, by the innermost frame's own package (self time). Run: {@code java -cp
 * sluice-bench.jar io.sluice.bench.FloorProfile sluice.jfr [noop.jfr ...]}. The shares multiply the
 * floor's per-call CPU of the server's event loops ({@code --threads}) into µs per call.
 */
final class FloorProfile {
  private FloorProfile() {}

  /**
   * Each argument a recording, optionally {@code =µs}: the server's event-loop CPU per call ({@code
   * --threads}), which the parts' shares are then multiplied into.
   */
  public static void main(String[] args) throws IOException {
    for (String arg : args) {
      int eq = arg.lastIndexOf('=');
      boolean scaled = eq > 0 && arg.substring(eq + 1).matches("[0-9.]+");
      print(
          System.out,
          Path.of(scaled ? arg.substring(0, eq) : arg),
          scaled ? Double.parseDouble(arg.substring(eq + 1)) : Double.NaN);
    }
  }

  static void print(PrintStream out, Path file) throws IOException {
    print(out, file, Double.NaN);
  }

  /** As above; {@code perCall}: µs per call the event loops' samples stand for (NaN: none). */
  static void print(PrintStream out, Path file, double perCall) throws IOException {
    Map<String, Long> parts = new HashMap<>();
    Map<String, Long> owner = new HashMap<>();
    Map<String, Long> self = new HashMap<>();
    Map<String, Long> sluiceClass = new HashMap<>();
    Map<String, Long> topMethod = new HashMap<>();
    Map<String, Long> ownerClass = new HashMap<>();
    Map<String, Long> allocSluice = new HashMap<>();
    Map<String, Long> allocOwner = new HashMap<>();
    Map<String, Long> allocClass = new HashMap<>();
    Map<String, Long> threads = new HashMap<>();
    long samples = 0;
    long allocBytes = 0;
    long gcs = 0;
    Duration gcPause = Duration.ZERO;
    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
      String type = e.getEventType().getName();
      switch (type) {
        case "jdk.ExecutionSample" -> {
          RecordedStackTrace st = e.getStackTrace();
          if (st == null || st.getFrames().isEmpty()) {
            continue;
          }
          samples++;
          List<RecordedFrame> frames = st.getFrames();
          owner.merge(owner(frames), 1L, Long::sum);
          var sampled = e.getThread("sampledThread");
          if (sampled != null
              && FloorThreads.group(String.valueOf(sampled.getJavaName()))
                  .startsWith("grpc-default-worker")) {
            parts.merge(FloorParts.part(frames), 1L, Long::sum);
          }
          self.merge(pkg(className(frames.get(0))), 1L, Long::sum);
          topMethod.merge(
              className(frames.get(0)) + "." + frames.get(0).getMethod().getName(), 1L, Long::sum);
          String sc = innermostSluice(frames);
          if (sc != null) {
            sluiceClass.merge(sc, 1L, Long::sum);
          }
          ownerClass.merge(ownerClass(frames), 1L, Long::sum);
          var t = e.getThread("sampledThread");
          threads.merge(
              t == null ? "?" : FloorThreads.group(String.valueOf(t.getJavaName())), 1L, Long::sum);
        }
        case "jdk.ObjectAllocationSample" -> {
          long w = e.getLong("weight");
          allocBytes += w;
          RecordedStackTrace st = e.getStackTrace();
          allocOwner.merge(st == null ? "?" : owner(st.getFrames()), w, Long::sum);
          allocClass.merge(e.getClass("objectClass").getName(), w, Long::sum);
          if (st != null) {
            allocSluice.merge(ownerClass(st.getFrames()), w, Long::sum);
          }
        }
        case "jdk.GarbageCollection" -> {
          gcs++;
          gcPause = gcPause.plus(e.getDuration("sumOfPauses"));
        }
        default -> {}
      }
    }
    out.printf(
        Locale.ROOT,
        "%n== %s: %d CPU samples, %.1f MB sampled allocation, %d GCs (pauses %d ms)%n",
        file,
        samples,
        allocBytes / 1e6,
        gcs,
        gcPause.toMillis());
    partsTable(out, parts, perCall);
    top(out, "CPU samples by owner (innermost Sluice frame, else grpc, netty, JDK)", owner, 30);
    top(out, "CPU samples by the innermost frame's package (self)", self, 20);
    top(out, "CPU samples by thread group", threads, 10);
    top(out, "CPU samples by innermost Sluice class", sluiceClass, 40);
    top(out, "CPU samples by owner class (the layer frame that owns the sample)", ownerClass, 50);
    top(out, "CPU samples by innermost method (self)", topMethod, 40);
    top(out, "allocation by owner", allocOwner, 25);
    top(out, "allocation by class", allocClass, 25);
    top(out, "allocation by owner class", allocSluice, 40);
  }

  /**
   * The part a stack belongs to: its innermost frame of a layer (Sluice's package, grpc or Netty),
   * library frames (the JDK, Jackson, protobuf, ...) counted to the layer that called them.
   * Sluice's transport guard sits in front of grpc's codec, so grpc's reading runs inside its
   * frame: only what the guard itself runs is the guard's.
   */
  static String owner(List<RecordedFrame> frames) {
    for (RecordedFrame f : frames) {
      String c = className(f);
      if (c.startsWith("io.sluice.")) {
        return pkg(c);
      }
      if (c.startsWith("io.grpc.netty.shaded.io.netty.")) {
        return "netty";
      }
      if (c.startsWith("io.grpc.")) {
        return "grpc";
      }
    }
    return frames.isEmpty() ? "?" : pkg(className(frames.get(frames.size() - 1)));
  }

  /** The class of the layer frame {@link #owner} picks (inner classes folded). */
  static String ownerClass(List<RecordedFrame> frames) {
    for (RecordedFrame f : frames) {
      String c = className(f);
      if (c.startsWith("io.sluice.") || c.startsWith("io.grpc.")) {
        int dollar = c.indexOf('$');
        return dollar < 0 ? c : c.substring(0, dollar);
      }
    }
    return "?";
  }

  private static @Nullable String innermostSluice(List<RecordedFrame> frames) {
    for (RecordedFrame f : frames) {
      String c = className(f);
      if (c.startsWith("io.sluice.")) {
        int dollar = c.indexOf('$');
        return dollar < 0 ? c : c.substring(0, dollar);
      }
    }
    return null;
  }

  private static String className(RecordedFrame f) {
    return f.getMethod() == null ? "?" : f.getMethod().getType().getName();
  }

  /** A class's package, shortened to the part that names a layer. */
  static String pkg(String cls) {
    if (cls.startsWith("io.sluice.")) {
      String rest = cls.substring("io.sluice.".length());
      int dot = rest.indexOf('.');
      return dot < 0 ? "sluice" : "sluice." + rest.substring(0, dot);
    }
    for (String p :
        new String[] {
          "io.grpc.netty.shaded.io.netty",
          "io.grpc",
          "com.google.protobuf",
          "com.fasterxml.jackson",
          "io.micrometer",
          "io.opentelemetry",
          "java.",
          "jdk.",
          "sun."
        }) {
      if (cls.startsWith(p)) {
        return p.equals("io.grpc.netty.shaded.io.netty") ? "netty" : p.endsWith(".") ? "jdk" : p;
      }
    }
    int dot = cls.lastIndexOf('.');
    return dot < 0 ? cls : cls.substring(0, dot);
  }

  /** The event loops' samples by {@link FloorParts} part, with µs per call when known. */
  private static void partsTable(PrintStream out, Map<String, Long> parts, double perCall) {
    long total = parts.values().stream().mapToLong(Long::longValue).sum();
    if (total == 0) {
      return;
    }
    out.printf(
        Locale.ROOT,
        "-- event loops' CPU samples by part (%d samples)%s%n| part | share | µs per call |%n"
            + "|---|---|---|%n",
        total,
        Double.isNaN(perCall) ? "" : String.format(Locale.ROOT, " of %.2f µs per call", perCall));
    parts.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
        .forEach(
            e -> {
              double share = (double) e.getValue() / total;
              out.printf(
                  Locale.ROOT,
                  "| %s | %.1f %% | %s |%n",
                  e.getKey(),
                  100 * share,
                  Double.isNaN(perCall)
                      ? "-"
                      : String.format(Locale.ROOT, "%.2f", share * perCall));
            });
  }

  private static void top(PrintStream out, String title, Map<String, Long> counts, int n) {
    long total = counts.values().stream().mapToLong(Long::longValue).sum();
    if (total == 0) {
      return;
    }
    out.printf(Locale.ROOT, "-- %s%n", title);
    counts.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
        .limit(n)
        .forEach(
            e ->
                out.printf(
                    Locale.ROOT, "  %5.1f %%  %s%n", 100.0 * e.getValue() / total, e.getKey()));
  }
}
