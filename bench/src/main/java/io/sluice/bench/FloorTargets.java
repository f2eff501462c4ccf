package io.sluice.bench;

import io.sluice.bench.FloorServers.NoOp;
import io.sluice.bench.FloorServers.Sluice;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The servers one floor run measures, by target name ({@code noop}, {@code noop-answers}, {@code
 * sluice}, {@code sluice-reject}, {@code sluice-redis}, ...): either in this JVM beside the
 * generator, or each in a child JVM of its own ({@code floor --serve TARGET --port P}), so the
 * generator does not share a JVM, a heap or a JIT with them; then each server's CPU per call is
 * read from procfs.
 */
final class FloorTargets implements AutoCloseable {
  private final Map<String, Integer> ports = new LinkedHashMap<>();
  private final Map<String, AutoCloseable> inProcess = new LinkedHashMap<>();
  private final Map<String, Process> children = new LinkedHashMap<>();
  // sluice-telemetry's OTLP sink when it runs in a child: served by this process
  private io.sluice.harness.@Nullable OtlpReceiver sink;

  private FloorTargets() {}

  /** Starts {@code targets} in this JVM. */
  static FloorTargets inProcess(Floor floor, List<String> targets) throws IOException {
    FloorTargets t = new FloorTargets();
    try {
      for (String target : targets) {
        AutoCloseable server = floor.start(target, 0);
        t.inProcess.put(target, server);
        t.ports.put(target, port(server));
      }
    } catch (IOException | RuntimeException e) {
      t.close();
      throw e;
    }
    return t;
  }

  /**
   * Starts each of {@code targets} in a child JVM of its own (same jar), on a free port, with
   * {@code jvmArgs} ({@code {target}} replaced by the target's name: a profile per server).
   */
  static FloorTargets separate(
      List<String> targets,
      @Nullable String redis,
      @Nullable Path baselineJar,
      List<String> jvmArgs,
      Path logDir)
      throws IOException, InterruptedException {
    FloorTargets t = new FloorTargets();
    try {
      String java = ProcessHandle.current().info().command().orElse("java");
      Path answers = logDir.resolve("noop-answers.bin");
      if (targets.contains("noop-answers")) {
        captureAnswers(java, answers, logDir);
      }
      for (String target : targets) {
        int port = freePort();
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        jvmArgs.forEach(a -> cmd.add(a.replace("{target}", target)));
        cmd.addAll(
            List.of(
                "-cp",
                target.equals("sluice-baseline") && baselineJar != null
                    ? baselineJar.toString()
                    : System.getProperty("java.class.path"),
                BenchMain.class.getName(),
                "floor",
                "--serve",
                serveName(target),
                "--port",
                Integer.toString(port)));
        if (redis != null && target.equals("sluice-redis")) {
          cmd.addAll(List.of("--redis", redis));
        }
        if (target.equals("noop-answers")) {
          cmd.addAll(List.of("--answers", answers.toString()));
        }
        if (target.equals("sluice-telemetry")) {
          t.sink = TelemetrySink.start();
          cmd.addAll(List.of("--otlp-endpoint", t.sink.endpoint()));
        }
        Process p =
            new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(logDir.resolve(target + ".log").toFile())
                .start();
        t.children.put(target, p);
        t.ports.put(target, port);
      }
      for (Map.Entry<String, Integer> e : t.ports.entrySet()) {
        awaitPort(e.getKey(), e.getValue(), Objects.requireNonNull(t.children.get(e.getKey())));
      }
    } catch (IOException | InterruptedException | RuntimeException e) {
      t.close();
      throw e;
    }
    return t;
  }

  /** Targets already running as {@code children} (child processes by target name), no ports. */
  static FloorTargets ofChildren(Map<String, Process> children) {
    FloorTargets t = new FloorTargets();
    t.children.putAll(children);
    return t;
  }

  /** What a target's child serves: a twin or the baseline serves what its original does. */
  static String serveName(String target) {
    return switch (target) {
      case "sluice-baseline", "sluice-twin" -> "sluice";
      case "noop-twin" -> "noop";
      default -> target;
    };
  }

  private static int port(AutoCloseable server) {
    if (server instanceof Sluice s) {
      return s.server.grpcPort();
    }
    return server instanceof FloorReplies.Server r
        ? r.server.getPort()
        : ((NoOp) server).server.getPort();
  }

  /** Target sluice's answers, captured by a JVM of their own into {@code file}. */
  private static void captureAnswers(String java, Path file, Path logDir)
      throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                BenchMain.class.getName(),
                "floor",
                "--capture-answers",
                file.toString())
            .redirectErrorStream(true)
            .redirectOutput(logDir.resolve("noop-answers-capture.log").toFile())
            .start();
    if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("capturing Sluice's answers failed (see " + logDir + ")");
    }
  }

  int port(String target) {
    return Objects.requireNonNull(ports.get(target), target);
  }

  /** Whether the servers run in child JVMs (their CPU is then read per server). */
  boolean separate() {
    return !children.isEmpty();
  }

  /** The target's server in this JVM, or null when it runs in a child. */
  @Nullable AutoCloseable server(String target) {
    return inProcess.get(target);
  }

  /** The target's child JVM's pid, or -1 when it runs in this JVM. */
  long pid(String target) {
    Process p = children.get(target);
    return p == null ? -1 : p.pid();
  }

  /** CPU time (user + system) of the target's child JVM so far, in ns; 0 when in this JVM. */
  long cpuNanos(String target) {
    Process p = children.get(target);
    if (p == null) {
      return 0;
    }
    try {
      String stat = Files.readString(Path.of("/proc/" + p.pid() + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14, 15)
      return ticks * (1_000_000_000L / CLOCK_TICKS);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /** Linux's USER_HZ: procfs counts CPU time in these ticks. */
  private static final long CLOCK_TICKS = 100;

  /**
   * CPU time of every child JVM but {@code target}'s so far (the servers not being measured), in
   * ns: what they take from the cores during {@code target}'s window.
   */
  long othersCpuNanos(String target) {
    long sum = 0;
    for (String other : children.keySet()) {
      if (!other.equals(target)) {
        sum += cpuNanos(other);
      }
    }
    return sum;
  }

  /**
   * Lets only {@code target}'s child JVM run: the others are stopped ({@code SIGSTOP}) until the
   * next call or {@link #resumeAll()}, so no idle server's GC, JIT or timers, and no aftermath of
   * the server measured before, runs on the cores while {@code target} is measured. A stopped JVM's
   * threads resume where they were; its sockets stay open (its channels carry no calls meanwhile).
   * Nothing happens for servers in this JVM.
   */
  void runOnly(String target) throws IOException, InterruptedException {
    List<Long> stop = new ArrayList<>();
    children.forEach(
        (name, p) -> {
          if (!name.equals(target)) {
            stop.add(p.pid());
          }
        });
    signal("-STOP", stop);
    Process mine = children.get(target);
    if (mine != null) {
      signal("-CONT", List.of(mine.pid()));
    }
  }

  /** Lets every child JVM run again. */
  void resumeAll() throws IOException, InterruptedException {
    signal("-CONT", children.values().stream().map(Process::pid).toList());
  }

  private void signal(String signal, List<Long> pids) throws IOException, InterruptedException {
    if (pids.isEmpty()) {
      return;
    }
    List<String> cmd = new ArrayList<>(List.of("kill", signal));
    pids.forEach(pid -> cmd.add(Long.toString(pid)));
    Process kill = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    boolean ended = kill.waitFor(10, TimeUnit.SECONDS);
    if (!ended || kill.exitValue() != 0) {
      String said = ended ? new String(kill.getInputStream().readAllBytes()).trim() : "";
      kill.destroyForcibly(); // closes its output: read first
      throw new IOException(
          "kill "
              + signal
              + " "
              + pids
              + (ended ? " failed" : " did not end within 10 s")
              + (said.isEmpty() ? "" : " (" + said + ")")
              + gone(children));
    }
  }

  /**
   * Which child JVMs have ended, with their exit codes ({@code ""} when all run): a child that
   * ended makes a signal to it fail, and its name says which server to look at (its log in the
   * floor's log directory).
   */
  static String gone(Map<String, Process> children) {
    StringBuilder out = new StringBuilder();
    children.forEach(
        (name, p) -> {
          if (!p.isAlive()) {
            out.append(out.length() == 0 ? "; ended: " : ", ")
                .append(name)
                .append(" (pid ")
                .append(p.pid())
                .append(", exit code ")
                .append(p.exitValue())
                .append(')');
          }
        });
    return out.toString();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void awaitPort(String target, int port, Process p)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (System.nanoTime() - deadline < 0) {
      if (!p.isAlive()) {
        throw new IOException(target + " exited with " + p.exitValue() + " before serving");
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        Thread.sleep(200);
      }
    }
    throw new IOException(target + " did not listen on " + port + " within 180 s");
  }

  @Override
  public void close() {
    inProcess.values().forEach(FloorTargets::closeQuietly);
    if (sink != null) {
      closeQuietly(sink);
    }
    try {
      resumeAll(); // a stopped JVM would not act on SIGTERM
    } catch (IOException e) {
      children.values().forEach(Process::destroyForcibly);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      children.values().forEach(Process::destroyForcibly);
    }
    for (Process p : children.values()) {
      p.destroy();
    }
    for (Process p : children.values()) {
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
  }

  static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception ignored) {
      // shutting down
    }
  }
}
