package io.sluice.store.redis;

import io.sluice.store.LocalRedis;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/**
 * A test's own redis-server with the append-only file on ({@code appendfsync} as given), no RDB
 * snapshots, in {@code dir}: started on a port, killed with SIGKILL (no chance to write anything
 * more), and started again on the same directory and port to read its file back.
 */
final class AofRedis {
  private final Path dir;
  private final String fsync;
  private Process redis;

  AofRedis(Path dir, String fsync) {
    this.dir = dir;
    this.fsync = fsync;
  }

  void start(int port) throws IOException {
    redis =
        new ProcessBuilder(
                "redis-server",
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                fsync,
                "--dir",
                dir.toString())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> LocalRedis.reachable(port));
  }

  /** SIGKILL, if running. */
  void kill() throws InterruptedException {
    if (redis != null) {
      redis.destroyForcibly();
      redis.waitFor(10, TimeUnit.SECONDS);
      redis = null;
    }
  }
}
