package io.sluice.store;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.UUID;

/** Helpers for tests against the Redis that CI runs on 127.0.0.1:6379. */
public final class LocalRedis {
  public static final int PORT = 6379;

  private LocalRedis() {}

  public static boolean reachable(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** A key prefix unique to this test run, so runs never see each other's counters. */
  public static String uniquePrefix() {
    return "sluicetest-" + UUID.randomUUID() + "-";
  }

  public static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
