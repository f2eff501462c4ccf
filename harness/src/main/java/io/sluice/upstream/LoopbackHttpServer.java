package io.sluice.upstream;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * An {@link Upstream} served over loopback HTTP/1.1 (the JDK's server): each request goes to the
 * upstream, its answer streams back chunk by chunk; a client that leaves cancels the body.
 */
final class LoopbackHttpServer {
  private final HttpServer server;
  private final ExecutorService executor;

  private LoopbackHttpServer(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /** Serves {@code upstream} on 127.0.0.1:{@code port} (0: a free port). */
  static LoopbackHttpServer start(int port, Upstream upstream) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
    ExecutorService executor = Executors.newCachedThreadPool();
    server.setExecutor(executor);
    server.createContext(
        "/",
        exchange -> {
          try (exchange) {
            byte[] requestBody;
            try (InputStream in = exchange.getRequestBody()) {
              requestBody = in.readAllBytes();
            }
            HttpHeaders headers = new HttpHeaders();
            headers.add(":method", exchange.getRequestMethod());
            headers.add(":path", exchange.getRequestURI().toString());
            exchange
                .getRequestHeaders()
                .forEach((name, values) -> values.forEach(v -> headers.add(name, v)));
            UpstreamResponse response =
                upstream.send(new UpstreamRequest(headers, requestBody)).join();
            for (Map.Entry<String, String> h : response.headers().entries()) {
              if (!h.getKey().equals("content-length")) {
                exchange.getResponseHeaders().add(h.getKey(), h.getValue());
              }
            }
            BlockingQueue<Object> chunks = new LinkedBlockingQueue<>();
            Object end = new Object();
            Runnable cancel = () -> {};
            if (!response.body().isEmpty()) {
              cancel =
                  response
                      .body()
                      .subscribe(
                          (data, eos) -> {
                            chunks.add(data);
                            if (eos) {
                              chunks.add(end);
                            }
                          });
            } else {
              chunks.add(end);
            }
            exchange.sendResponseHeaders(response.status(), 0);
            try (OutputStream out = exchange.getResponseBody()) {
              for (Object c = chunks.take(); c != end; c = chunks.take()) {
                out.write((byte[]) c);
                out.flush();
              }
            } catch (IOException | InterruptedException e) {
              cancel.run();
              if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
              }
            }
          }
        });
    server.start();
    return new LoopbackHttpServer(server, executor);
  }

  int port() {
    return server.getAddress().getPort();
  }

  void stop() {
    server.stop(0);
    executor.shutdownNow();
  }
}
