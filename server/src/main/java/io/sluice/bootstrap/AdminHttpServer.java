package io.sluice.bootstrap;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The admin HTTP port: {@code /metrics} (Prometheus), {@code /healthz} (liveness: the process
 * answers), {@code /readyz} (readiness: serving and not draining), {@code /config} (the effective
 * config), plus routes other modules add. Off the request path: its own two threads.
 */
public final class AdminHttpServer implements AutoCloseable {
  /** A response: status, content type, body. */
  public record Reply(int status, String contentType, String body) {
    public static Reply text(int status, String body) {
      return new Reply(status, "text/plain; charset=utf-8", body);
    }

    public static Reply json(int status, String body) {
      return new Reply(status, "application/json", body);
    }
  }

  private final HttpServer server;
  private final ExecutorService executor;

  public AdminHttpServer(String host, int port) throws IOException {
    this.server = HttpServer.create(new InetSocketAddress(host, port), 64);
    this.executor =
        Executors.newFixedThreadPool(
            2,
            r -> {
              Thread t = new Thread(r, "sluice-admin");
              t.setDaemon(true);
              return t;
            });
    server.setExecutor(executor);
  }

  /** A route that reads the request body (e.g. {@code POST /json}); runs on the admin threads. */
  public AdminHttpServer routeWithBody(
      String path,
      java.util.function.Function<String, java.util.concurrent.CompletionStage<Reply>> handler) {
    return mount(
        path,
        ex -> {
          String body;
          try (var in = ex.getRequestBody()) {
            body = new String(in.readNBytes(1 << 20), StandardCharsets.UTF_8);
          }
          try {
            return handler
                .apply(body)
                .toCompletableFuture()
                .get(5, java.util.concurrent.TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Reply.text(500, "interrupted\n");
          } catch (java.util.concurrent.ExecutionException
              | java.util.concurrent.TimeoutException e) {
            return Reply.text(500, "error: " + e.getClass().getSimpleName() + "\n");
          }
        });
  }

  public AdminHttpServer route(String path, Supplier<Reply> handler) {
    return mount(path, ex -> handler.get());
  }

  /** What a route computes from the exchange. */
  @FunctionalInterface
  private interface Handler {
    Reply handle(HttpExchange exchange) throws IOException;
  }

  /** Exact-path mount: other paths under it are 404; failures are 500 without a stack trace. */
  private AdminHttpServer mount(String path, Handler handler) {
    server.createContext(
        path,
        ex -> {
          try {
            if (!ex.getRequestURI().getPath().equals(path)) {
              write(ex, Reply.text(404, "not found\n"));
              return;
            }
            write(ex, handler.handle(ex));
          } catch (RuntimeException e) {
            write(ex, Reply.text(500, "error: " + e.getClass().getSimpleName() + "\n"));
          }
        });
    return this;
  }

  private static void write(HttpExchange ex, Reply reply) throws IOException {
    byte[] body = reply.body().getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", reply.contentType());
    ex.sendResponseHeaders(reply.status(), body.length == 0 ? -1 : body.length);
    try (OutputStream os = ex.getResponseBody()) {
      os.write(body);
    }
  }

  public void start() {
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** The bound address (host and port). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
