package io.sluice.store.redis;

import io.sluice.store.LocalRedis;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * Real Redis topologies for tests, from the local {@code redis-server} / {@code redis-cli}
 * binaries: a Sentinel set-up (master, one replica, three sentinels) and a Cluster (three masters,
 * each with one replica). Every process listens on a free 127.0.0.1 port, keeps its files in a temp
 * directory, and is killed by {@link AutoCloseable#close()} or, if a test or the JVM dies first, by
 * a shutdown hook. Every wait is bounded ({@link #waitFor}); nothing here sleeps for a fixed time.
 * Timings are short (sentinel {@code down-after-milliseconds} 1000, cluster {@code
 * cluster-node-timeout} 1000) so a failover takes a few seconds.
 *
 * <p>Use: {@code assumeTrue(RedisProcesses.available())}, then {@code try (var s =
 * RedisProcesses.sentinel()) { RedisPorts.open(StoreEnv.redis(s.env(...)), ...) }}.
 */
public final class RedisProcesses {
  /** Every process started here and still alive: the shutdown hook kills them. */
  private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly), "redis-kill"));
  }

  /** Longest wait for any topology to come up or change. */
  static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

  private RedisProcesses() {}

  /** Whether both {@code redis-server} and {@code redis-cli} run here. */
  public static boolean available() {
    return runs("redis-server", "--version") && runs("redis-cli", "--version");
  }

  private static boolean runs(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Master + 1 replica + 3 sentinels (quorum 2), ready: every sentinel sees replica and peers. */
  public static Sentinel sentinel() throws IOException {
    Sentinel s = new Sentinel(Files.createTempDirectory("sluice-sentinel"));
    try {
      s.start();
      return s;
    } catch (RuntimeException | IOException e) {
      s.close();
      throw e;
    }
  }

  /** 3 masters + 3 replicas made with {@code redis-cli --cluster create}, ready. */
  public static Cluster cluster() throws IOException {
    Cluster c = new Cluster(Files.createTempDirectory("sluice-cluster"));
    try {
      c.start();
      return c;
    } catch (RuntimeException | IOException e) {
      c.close();
      throw e;
    }
  }

  /**
   * Runs {@code redis-cli -p port args...} (at most 10 s) and returns its output ("" when the
   * server does not answer: redis-cli prints the error and exits non-zero).
   */
  public static String cli(int port, String... args) {
    List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", "" + port));
    cmd.addAll(List.of(args));
    return run(cmd, Duration.ofSeconds(10));
  }

  private static String run(List<String> cmd, Duration timeout) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      LIVE.add(p);
      try {
        // output is small; read it after exit would risk a full pipe, so read with the deadline
        var out = new java.io.ByteArrayOutputStream();
        Thread reader =
            new Thread(
                () -> {
                  try {
                    p.getInputStream().transferTo(out);
                  } catch (IOException ignored) {
                    // process killed
                  }
                });
        reader.setDaemon(true);
        reader.start();
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
          p.destroyForcibly();
          throw new IllegalStateException("timed out after " + timeout + ": " + cmd);
        }
        reader.join(1000);
        String text = out.toString(StandardCharsets.UTF_8);
        return p.exitValue() == 0 ? text : "";
      } finally {
        LIVE.remove(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Polls {@code condition} every 50 ms until true; fails after {@code timeout}. */
  public static void waitFor(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      boolean ok;
      try {
        ok = condition.getAsBoolean();
      } catch (RuntimeException e) {
        ok = false;
      }
      if (ok) {
        long waited = timeout.toNanos() - (deadline - System.nanoTime());
        System.out.printf("redis fixture: %s after %d ms%n", what, waited / 1_000_000);
        return;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new IllegalStateException("timed out after " + timeout + " waiting for " + what);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  /** {@code INFO section} (or sentinel/cluster output) as field → value. */
  public static Map<String, String> fields(String text, String separator) {
    Map<String, String> out = new HashMap<>();
    for (String line : text.split("\r?\n")) {
      int i = line.indexOf(separator);
      if (i > 0) {
        out.put(line.substring(0, i).trim(), line.substring(i + separator.length()).trim());
      }
    }
    return out;
  }

  /** One redis-server (or sentinel) process. */
  public static final class Node {
    final int port;
    final Path dir;
    final List<String> args;
    Process process;

    Node(int port, Path dir, List<String> args) {
      this.port = port;
      this.dir = dir;
      this.args = args;
    }

    public int port() {
      return port;
    }

    void start() throws IOException {
      Files.createDirectories(dir);
      List<String> cmd = new ArrayList<>();
      cmd.add("redis-server");
      cmd.addAll(args);
      process =
          new ProcessBuilder(cmd)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("out.log").toFile())
              .start();
      LIVE.add(process);
      waitFor("redis on port " + port, Duration.ofSeconds(10), () -> LocalRedis.reachable(port));
    }

    public boolean alive() {
      return process != null && process.isAlive();
    }

    /** SIGKILL, and waits (bounded) until the process is gone. */
    public void kill() {
      Process p = process;
      if (p != null) {
        p.destroyForcibly();
        try {
          p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        LIVE.remove(p);
        process = null;
      }
    }

    /**
     * {@code DEBUG SLEEP seconds} from a background redis-cli: the server stops answering (its
     * connections stay open) and comes back by itself.
     */
    public void sleepInBackground(int seconds) {
      Thread t = new Thread(() -> cli(port, "DEBUG", "SLEEP", "" + seconds), "redis-sleep-" + port);
      t.setDaemon(true);
      t.start();
    }

    /** {@code role} from {@code INFO replication} ("" when it does not answer). */
    public String role() {
      return fields(cli(port, "INFO", "replication"), ":").getOrDefault("role", "");
    }

    /** The server's own log (for a failure message). */
    public String log() {
      try {
        return Files.readString(dir.resolve("out.log"));
      } catch (IOException e) {
        return "";
      }
    }
  }

  private abstract static class Topology implements AutoCloseable {
    final Path root;
    final List<Node> nodes = new ArrayList<>();

    Topology(Path root) {
      this.root = root;
    }

    Node node(String name, List<String> args, int port) throws IOException {
      Node n = new Node(port, root.resolve(name), args);
      nodes.add(n);
      n.start();
      return n;
    }

    @Override
    public void close() {
      nodes.forEach(Node::kill);
      try (Stream<Path> files = Files.walk(root)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException ignored) {
        // temp dir; best effort
      }
    }
  }

  private static List<String> serverArgs(int port, String... more) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "--port",
                "" + port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
                "--enable-debug-command",
                "local",
                // a replica's (re)sync starts at once (default: wait 5 s for more replicas)
                "--repl-diskless-sync-delay",
                "0"));
    a.addAll(List.of(more));
    return a;
  }

  /** Master, one replica, three sentinels watching {@link #MASTER_NAME}. */
  public static final class Sentinel extends Topology {
    public static final String MASTER_NAME = "sluicemaster";
    Node master;
    Node replica;
    final List<Node> sentinels = new ArrayList<>();

    Sentinel(Path root) {
      super(root);
    }

    void start() throws IOException {
      int mp = LocalRedis.freePort();
      master = node("master", serverArgs(mp), mp);
      int rp = LocalRedis.freePort();
      replica = node("replica", serverArgs(rp, "--replicaof", "127.0.0.1", "" + mp), rp);
      waitFor(
          "replica in sync",
          READY_TIMEOUT,
          () -> "up".equals(fields(cli(rp, "INFO", "replication"), ":").get("master_link_status")));
      for (int i = 0; i < 3; i++) {
        int sp = LocalRedis.freePort();
        Path dir = root.resolve("sentinel" + i);
        Files.createDirectories(dir);
        Path conf = dir.resolve("sentinel.conf");
        Files.writeString(
            conf,
            String.join(
                "\n",
                "port " + sp,
                "bind 127.0.0.1",
                "protected-mode no",
                "dir " + dir,
                "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + mp + " 2",
                "sentinel down-after-milliseconds " + MASTER_NAME + " 1000",
                "sentinel failover-timeout " + MASTER_NAME + " 2000",
                "sentinel parallel-syncs " + MASTER_NAME + " 1",
                ""));
        sentinels.add(node("sentinel" + i, List.of(conf.toString(), "--sentinel"), sp));
      }
      for (Node s : sentinels) {
        waitFor(
            "sentinel " + s.port + " sees replica and peers",
            READY_TIMEOUT,
            () -> {
              Map<String, String> m = sentinelMaster(s.port);
              return "1".equals(m.get("num-slaves"))
                  && "2".equals(m.get("num-other-sentinels"))
                  && "master".equals(m.get("flags"));
            });
      }
    }

    /** {@code SENTINEL MASTER} of one sentinel as field → value. */
    static Map<String, String> sentinelMaster(int sentinelPort) {
      String[] lines = cli(sentinelPort, "SENTINEL", "MASTER", MASTER_NAME).split("\r?\n");
      Map<String, String> m = new LinkedHashMap<>();
      for (int i = 0; i + 1 < lines.length; i += 2) {
        m.put(lines[i].trim(), lines[i + 1].trim());
      }
      return m;
    }

    /** The master's port as the first sentinel that answers reports it. */
    public int currentMasterPort() {
      for (Node s : sentinels) {
        String[] addr = cli(s.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME).split("\n");
        if (addr.length >= 2) {
          return Integer.parseInt(addr[1].trim());
        }
      }
      throw new IllegalStateException("no sentinel answers");
    }

    public Node master() {
      return master;
    }

    public Node replica() {
      return replica;
    }

    /** REDIS_* for this set-up as production reads them, plus {@code extra}. */
    public Map<String, String> env(Map<String, String> extra) {
      StringBuilder url = new StringBuilder(MASTER_NAME);
      sentinels.forEach(s -> url.append(",127.0.0.1:").append(s.port));
      Map<String, String> env = new HashMap<>(extra);
      env.put("REDIS_TYPE", "sentinel");
      env.put("REDIS_URL", url.toString());
      return env;
    }

    /**
     * Waits until every sentinel reports {@code node} as the master and {@code node} says it is
     * one.
     */
    public void awaitPromotion(Node node, Duration timeout) {
      waitFor(
          "sentinels promote " + node.port,
          timeout,
          () ->
              sentinels.stream()
                      .allMatch(
                          s ->
                              cli(s.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
                                  .contains("" + node.port))
                  && "master".equals(node.role()));
    }

    /** Waits until {@code node} is a replica again with its link to the master up. */
    public void awaitReplicaInSync(Node node, Duration timeout) {
      waitFor(
          node.port + " replicating",
          timeout,
          () -> {
            Map<String, String> r = fields(cli(node.port, "INFO", "replication"), ":");
            return "slave".equals(r.get("role")) && "up".equals(r.get("master_link_status"));
          });
      // and every sentinel knows it as a replica again (else it cannot be promoted)
      waitFor(
          "sentinels see replica " + node.port,
          timeout,
          () ->
              sentinels.stream()
                  .allMatch(
                      s -> {
                        String text = cli(s.port, "SENTINEL", "REPLICAS", MASTER_NAME);
                        int i = text.indexOf("127.0.0.1:" + node.port);
                        return i >= 0 && text.indexOf("slave\n", i) > 0 && !text.contains("s_down");
                      }));
    }
  }

  /** Three masters, each with one replica. */
  public static final class Cluster extends Topology {
    Cluster(Path root) {
      super(root);
    }

    void start() throws IOException {
      List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
      for (int i = 0; i < 6; i++) {
        int p = LocalRedis.freePort();
        node(
            "node" + i,
            serverArgs(
                p,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "1000",
                // a replica takes over however long it was cut off (tests kill masters at once)
                "--cluster-replica-validity-factor",
                "0"),
            p);
        create.add("127.0.0.1:" + p);
      }
      create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
      String out = run(create, Duration.ofSeconds(30));
      if (!out.contains("All 16384 slots covered")) {
        throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
      }
      awaitHealthy(READY_TIMEOUT);
    }

    /**
     * Waits until every live node says {@code cluster_state:ok} and agrees on 3 masters each with a
     * connected replica (so a failover has somewhere to go).
     */
    public void awaitHealthy(Duration timeout) {
      waitFor(
          "cluster ok with 3 masters and 3 replicas",
          timeout,
          () ->
              nodes.stream()
                  .filter(Node::alive)
                  .allMatch(
                      n ->
                          "ok"
                                  .equals(
                                      fields(cli(n.port, "CLUSTER", "INFO"), ":")
                                          .get("cluster_state"))
                              && mastersWithReplica(n.port) == 3));
    }

    private static int mastersWithReplica(int port) {
      String nodesText = cli(port, "CLUSTER", "NODES");
      Map<String, Boolean> masters = new HashMap<>();
      List<String> replicaOf = new ArrayList<>();
      for (String line : nodesText.split("\n")) {
        String[] f = line.trim().split(" ");
        if (f.length < 8 || f[2].contains("fail") || !"connected".equals(f[7])) {
          continue;
        }
        if (f[2].contains("master") && f.length > 8) {
          masters.put(f[0], false);
        } else if (f[2].contains("slave")) {
          replicaOf.add(f[3]);
        }
      }
      replicaOf.forEach(m -> masters.computeIfPresent(m, (k, v) -> true));
      return (int) masters.values().stream().filter(v -> v).count();
    }

    /** The port of the master serving {@code key}'s slot, as the first live node reports it. */
    public int masterPortFor(String key) {
      Node any = nodes.stream().filter(Node::alive).findFirst().orElseThrow();
      int slot = slot(key);
      for (String line : cli(any.port, "CLUSTER", "NODES").split("\n")) {
        String[] f = line.trim().split(" ");
        if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) {
          continue;
        }
        for (int i = 8; i < f.length; i++) {
          String[] range = f[i].split("-");
          if (range[0].startsWith("[")) {
            continue;
          }
          int lo = Integer.parseInt(range[0]);
          int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
          if (slot >= lo && slot <= hi) {
            return Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1, f[1].indexOf('@')));
          }
        }
      }
      throw new IllegalStateException("no master for slot " + slot);
    }

    /** The port of a replica of the master on {@code masterPort}. */
    public int replicaPortOf(int masterPort) {
      String id = cli(masterPort, "CLUSTER", "MYID").trim();
      for (String line : cli(masterPort, "CLUSTER", "NODES").split("\n")) {
        String[] f = line.trim().split(" ");
        if (f.length >= 4 && f[2].contains("slave") && f[3].equals(id)) {
          return Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1, f[1].indexOf('@')));
        }
      }
      throw new IllegalStateException("no replica of " + masterPort);
    }

    /** {@code CLUSTER KEYSLOT key}. */
    public int slot(String key) {
      Node any = nodes.stream().filter(Node::alive).findFirst().orElseThrow();
      return Integer.parseInt(cli(any.port, "CLUSTER", "KEYSLOT", key).trim());
    }

    public Node node(int port) {
      return nodes.stream().filter(n -> n.port == port).findFirst().orElseThrow();
    }

    /** REDIS_* for this cluster as production reads them (all six nodes as seeds), plus extra. */
    public Map<String, String> env(Map<String, String> extra) {
      StringBuilder url = new StringBuilder();
      for (Node n : nodes) {
        url.append(url.length() == 0 ? "" : ",").append("127.0.0.1:").append(n.port);
      }
      Map<String, String> env = new HashMap<>(extra);
      env.put("REDIS_TYPE", "cluster");
      env.put("REDIS_URL", url.toString());
      return env;
    }
  }
}
