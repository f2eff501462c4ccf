package io.sluice.e2e;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Envoy's loopback listener of intake's dispatch (docs/intake.md, "The loopback listener") in front
 * of one replica's emulated Envoy: an HTTP/1.1 listener on 127.0.0.1 that sends each dispatched job
 * through that emulator (ext_proc on its replica, then the upstream) with the dispatcher's headers
 * untouched (trusted on this listener), and answers the dispatcher with what Envoy answered. It
 * counts, per job id (the {@code x-sluice-dispatch} marker starts with it), the dispatches it saw
 * and those that reached the upstream.
 */
final class LoopbackListener implements AutoCloseable {
  /** Headers of the HTTP/1.1 hop that Envoy does not forward as request headers. */
  private static final Set<String> HOP =
      Set.of("host", "content-length", "connection", "transfer-encoding", "upgrade");

  private final HttpServer server;
  private final ExecutorService executor;
  private final Map<String, AtomicInteger> dispatched = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> reachedUpstream = new ConcurrentHashMap<>();
  private volatile EnvoyExtProcEmulator envoy;

  private LoopbackListener(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /** Listens on a free port of 127.0.0.1; answers 503 until {@link #via} names its Envoy. */
  static LoopbackListener start() throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    ExecutorService ex =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "loopback-listener");
              t.setDaemon(true);
              return t;
            });
    s.setExecutor(ex);
    LoopbackListener l = new LoopbackListener(s, ex);
    s.createContext("/", l::handle);
    s.start();
    return l;
  }

  /** The emulated Envoy this listener belongs to. */
  void via(EnvoyExtProcEmulator envoy) {
    this.envoy = envoy;
  }

  /** The base URL for {@code intake.dispatch.url}. */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Dispatches of job {@code id} this listener received. */
  int dispatched(String id) {
    AtomicInteger n = dispatched.get(id);
    return n == null ? 0 : n.get();
  }

  /** Dispatches of job {@code id} that reached the upstream through this listener. */
  int reachedUpstream(String id) {
    AtomicInteger n = reachedUpstream.get(id);
    return n == null ? 0 : n.get();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      byte[] body;
      try (InputStream in = ex.getRequestBody()) {
        body = in.readAllBytes();
      }
      HttpRequest.Builder b =
          HttpRequest.builder()
              .method(ex.getRequestMethod())
              .path(ex.getRequestURI().getRawPath())
              .authority("127.0.0.1")
              .bodyChunk(body);
      String job = "";
      for (var h : ex.getRequestHeaders().entrySet()) {
        String name = h.getKey().toLowerCase(Locale.ROOT);
        if (HOP.contains(name)) {
          continue;
        }
        for (String v : h.getValue()) {
          b.header(name, v);
        }
        if (name.equals("x-sluice-dispatch") && !h.getValue().isEmpty()) {
          String m = h.getValue().get(0);
          job = m.indexOf('.') < 0 ? "" : m.substring(0, m.indexOf('.'));
        }
      }
      dispatched.computeIfAbsent(job, k -> new AtomicInteger()).incrementAndGet();
      EnvoyExtProcEmulator e = envoy;
      if (e == null) {
        ex.sendResponseHeaders(503, -1);
        return;
      }
      HttpResult r = e.sendAsync(b.build()).get(60, TimeUnit.SECONDS);
      if (r.upstreamRequest().isPresent()) {
        reachedUpstream.computeIfAbsent(job, k -> new AtomicInteger()).incrementAndGet();
      }
      for (var h : r.headers().entries()) {
        String name = h.getKey().toLowerCase(Locale.ROOT);
        if (!name.startsWith(":") && !HOP.contains(name)) {
          ex.getResponseHeaders().add(name, h.getValue());
        }
      }
      byte[] answer = r.body();
      ex.sendResponseHeaders(r.status(), answer.length == 0 ? -1 : answer.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(answer);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ex.sendResponseHeaders(503, -1);
    } catch (Exception e) {
      ex.sendResponseHeaders(502, -1);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
