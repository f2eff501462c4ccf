package io.sluice.store.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test's own redis-server with the append-only file on ({@code appendfsync} as given), no RDB
 * snapshots, in the test's directory, on a free port, and a connection to it: started ({@link
 * #start}), killed with SIGKILL (no chance to write anything more) and started again on the same
 * directory and port to read its file back ({@link #killAndRestart}). A restart test registers it
 * ({@code @RegisterExtension}); after each test the connection is closed and the server killed.
 */
final class AofRedis implements AfterEachCallback {
  private final String fsync;
  private Path dir;
  private int port;
  private Process redis;
  private RedisConnection connection;

  AofRedis(String fsync) {
    this.fsync = fsync;
  }

  /**
   * Starts the server on a free port with its files in {@code dir} (the test is skipped without a
   * {@code redis-server} on the PATH); a connection to it.
   */
  RedisConnection start(Path dir) throws IOException {
    assumeTrue(RedisProcess.available(), "redis-server on the PATH");
    this.dir = dir;
    this.port = LocalRedis.freePort();
    launch();
    return connect();
  }

  /**
   * Closes the connection, kills the server with SIGKILL (no shutdown, no last write) and starts it
   * again on its directory and port; a new connection to it.
   */
  RedisConnection killAndRestart() throws IOException, InterruptedException {
    closeConnection();
    kill();
    launch();
    return connect();
  }

  @Override
  public void afterEach(ExtensionContext context) throws InterruptedException {
    closeConnection();
    kill();
  }

  private RedisConnection connect() {
    connection =
        new RedisConnection(
            RedisSettings.local(port).withCommandTimeout(Duration.ofSeconds(2)), Ticker.system());
    return connection;
  }

  private void launch() throws IOException {
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

  private void closeConnection() {
    if (connection != null) {
      connection.close();
      connection = null;
    }
  }

  /** SIGKILL, if running. */
  private void kill() throws InterruptedException {
    if (redis != null) {
      redis.destroyForcibly();
      redis.waitFor(10, TimeUnit.SECONDS);
      redis = null;
    }
  }
}
