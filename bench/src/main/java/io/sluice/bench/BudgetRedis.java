package io.sluice.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A redis-server of the bench's own on a free loopback port, with append-only persistence ({@code
 * appendfsync everysec}, as the k8s manifests run it), which the bench kills (SIGKILL, by its
 * process handle) and starts again on the same port and directory. Never the shared 6379.
 */
final class BudgetRedis implements AutoCloseable {
  private final int port;
  private final Path dir;
  private @Nullable Process process;

  private BudgetRedis(int port, Path dir) {
    this.port = port;
    this.dir = dir;
  }

  /** Whether a redis-server binary runs here. */
  static boolean available() {
    try {
      Process p = new ProcessBuilder("redis-server", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  static BudgetRedis start() throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    BudgetRedis r = new BudgetRedis(port, Files.createTempDirectory("sluice-bench-redis"));
    r.up();
    return r;
  }

  int port() {
    return port;
  }

  /** Starts the server (again) and waits up to 10 s until it answers. */
  void up() throws IOException, InterruptedException {
    process =
        new ProcessBuilder(
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(port),
                "--dir",
                dir.toString(),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < until) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException e) {
        Thread.sleep(50);
      }
    }
    throw new IOException("redis-server on port " + port + " did not answer within 10 s");
  }

  /** SIGKILL (the process this bench started), then waits until it is gone. */
  void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
      process = null;
    }
  }

  @Override
  public void close() throws InterruptedException {
    kill();
    try (var files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        deleteTree(p);
      }
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temp directory left behind
    }
  }

  private static void deleteTree(Path p) throws IOException {
    if (Files.isDirectory(p)) {
      try (var files = Files.list(p)) {
        for (Path c : (Iterable<Path>) files::iterator) {
          deleteTree(c);
        }
      }
    }
    Files.deleteIfExists(p);
  }
}
