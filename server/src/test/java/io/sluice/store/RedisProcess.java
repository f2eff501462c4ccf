package io.sluice.store;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/** A throwaway redis-server this test starts on its own port (no persistence) and kills. */
public final class RedisProcess implements AutoCloseable {
  private final int port;
  private Process process;

  public RedisProcess(int port) {
    this.port = port;
  }

  public int port() {
    return port;
  }

  public static boolean available() {
    try {
      Process p = new ProcessBuilder("redis-server", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  public RedisProcess start() throws IOException {
    process =
        new ProcessBuilder(
                "redis-server",
                "--port",
                Integer.toString(port),
                "--save",
                "",
                "--appendonly",
                "no")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> LocalRedis.reachable(port));
    return this;
  }

  /** SIGSTOP: the server hangs, connections stay open, every command waits for its timeout. */
  public void pause() throws IOException, InterruptedException {
    signal("-STOP");
  }

  /** SIGCONT after {@link #pause()}. */
  public void resume() throws IOException, InterruptedException {
    signal("-CONT");
  }

  private void signal(String sig) throws IOException, InterruptedException {
    Process k =
        new ProcessBuilder("kill", sig, Long.toString(process.pid()))
            .redirectErrorStream(true)
            .start();
    k.getInputStream().readAllBytes();
    if (!k.waitFor(5, TimeUnit.SECONDS) || k.exitValue() != 0) {
      throw new IOException("kill " + sig + " " + process.pid() + " failed");
    }
  }

  /** Kills the server (SIGKILL, which also ends a stopped process) and waits until it is gone. */
  public void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
      process = null;
    }
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
