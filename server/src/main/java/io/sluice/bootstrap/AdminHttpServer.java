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
 * config), plus routes other modules add, and {@code /}: the list of them with what each answers.
 * Off the request path: its own two threads.
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
  private final java.util.Map<String, String> described =
      java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<>());

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
    mount("/", ex -> index(ex.getRequestURI().getRawQuery()));
  }

  /** {@code GET /}: every route with what it answers (text, or JSON with {@code ?format=json}). */
  private Reply index(String rawQuery) {
    java.util.Map<String, String> routes;
    synchronized (described) {
      routes = new java.util.LinkedHashMap<>(described);
    }
    if ("json".equals(query(rawQuery).get("format"))) {
      StringBuilder sb = new StringBuilder("{\"endpoints\": [");
      String sep = "\n  ";
      for (var e : routes.entrySet()) {
        sb.append(sep)
            .append("{\"path\": \"")
            .append(jsonEscape(e.getKey()))
            .append("\", \"description\": \"")
            .append(jsonEscape(e.getValue()))
            .append("\"}");
        sep = ",\n  ";
      }
      return Reply.json(200, sb.append("\n]}\n").toString());
    }
    int width = routes.keySet().stream().mapToInt(String::length).max().orElse(0);
    StringBuilder sb = new StringBuilder("Sluice admin endpoints:\n");
    for (var e : routes.entrySet()) {
      sb.append("  ")
          .append(e.getKey())
          .append(" ".repeat(width - e.getKey().length() + 2))
          .append(e.getValue())
          .append('\n');
    }
    return Reply.text(200, sb.toString());
  }

  private static String jsonEscape(String s) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }

  /** The query string's parameters (first value of each; names and values URL-decoded). */
  static java.util.Map<String, String> query(String rawQuery) {
    java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
    if (rawQuery == null || rawQuery.isEmpty()) {
      return out;
    }
    for (String pair : rawQuery.split("&", -1)) {
      if (pair.isEmpty()) {
        continue; // "a=1&&b=2", a trailing "&"
      }
      int eq = pair.indexOf('=');
      String k = eq < 0 ? pair : pair.substring(0, eq);
      String v = eq < 0 ? "" : pair.substring(eq + 1);
      out.putIfAbsent(
          java.net.URLDecoder.decode(k, StandardCharsets.UTF_8),
          java.net.URLDecoder.decode(v, StandardCharsets.UTF_8));
    }
    return out;
  }

  /** Adds {@code path} to the list {@code GET /} shows. */
  public AdminHttpServer describe(String path, String description) {
    described.put(path, description);
    return this;
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

  /** A GET route listed by {@code GET /} with {@code description}. */
  public AdminHttpServer route(String path, String description, Supplier<Reply> handler) {
    describe(path, description);
    return mount(path, ex -> handler.get());
  }

  /** A route that reads the query string's parameters (e.g. {@code /config?format=yaml}). */
  public AdminHttpServer routeWithQuery(
      String path,
      String description,
      java.util.function.Function<java.util.Map<String, String>, Reply> handler) {
    describe(path, description);
    return mount(path, ex -> handler.apply(query(ex.getRequestURI().getRawQuery())));
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

  private final java.util.concurrent.atomic.AtomicBoolean started =
      new java.util.concurrent.atomic.AtomicBoolean();

  public void start() {
    if (started.compareAndSet(false, true)) {
      server.start();
    }
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
    // The listening socket is registered with the server's selector at bind time and only really
    // closed when the dispatcher thread deregisters it: a server that never started (another port
    // failed to bind) is started here so that stop() frees the port.
    start();
    server.stop(0);
    executor.shutdownNow();
  }
}
