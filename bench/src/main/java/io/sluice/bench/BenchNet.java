package io.sluice.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

/** Loopback helpers the benches share: a free port, and whether a host:port answers. */
final class BenchNet {
  private BenchNet() {}

  /** A port free at the time of the call (the OS picks it). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** True if a TCP connection to {@code host:port} opens within 500 ms (e.g. Redis is up). */
  static boolean reachable(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    try (Socket s = new Socket()) {
      s.connect(
          new InetSocketAddress(
              hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1))),
          500);
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }
}
