package io.sluice.bootstrap;

import java.io.IOException;
import java.net.BindException;

/**
 * A port Sluice cannot listen on, said in one line an operator can act on: which port (gRPC or
 * admin), the address, why, and the environment variable and config key that change it.
 */
public final class PortBindException extends IOException {
  private static final long serialVersionUID = 1L;

  private final boolean inUse;

  private PortBindException(String message, boolean inUse, Throwable cause) {
    super(message, cause);
    this.inUse = inUse;
  }

  /**
   * @param which {@code gRPC} or {@code admin HTTP}
   * @param envVars the environment variables that set host and port, e.g. {@code GRPC_HOST /
   *     GRPC_PORT}
   * @param keys the config keys, e.g. {@code server.grpc.host / server.grpc.port}
   */
  static PortBindException of(
      String which, String host, int port, String envVars, String keys, Throwable cause) {
    boolean inUse = addressInUse(cause);
    String why = inUse ? "address already in use (another process listens there)" : reason(cause);
    return new PortBindException(
        "cannot listen on the "
            + which
            + " port "
            + hostPort(host, port)
            + ": "
            + why
            + "; choose another with "
            + envVars
            + " or "
            + keys
            + " (0 = any free port)",
        inUse,
        cause);
  }

  /** Whether the address was taken (rather than, e.g., not assignable on this host). */
  public boolean addressInUse() {
    return inUse;
  }

  private static String hostPort(String host, int port) {
    return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
  }

  private static boolean addressInUse(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      String m = c.getMessage() == null ? "" : c.getMessage();
      if (m.contains("in use") || (c instanceof BindException && m.isEmpty())) {
        return true;
      }
    }
    return false;
  }

  private static String reason(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String m = root.getMessage();
    return m == null || m.isBlank() ? root.getClass().getSimpleName() : m;
  }
}
