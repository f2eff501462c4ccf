package io.sluice.harness;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Envoy's loopback listener of background intake's dispatch (docs/intake.md, "The loopback
 * listener"), for the end-to-end tests and the benchmarks: an HTTP/1.1 listener on 127.0.0.1 that
 * sends each dispatched job through an emulated Envoy ({@link #via}: one replica's emulator, or a
 * {@link Rig} balancing over several), with the dispatcher's headers untouched (trusted on this
 * listener) and the create route's per-route metadata, and answers the dispatcher with what Envoy
 * answered. It counts, per job id (the {@code x-sluice-dispatch} marker starts with it), the
 * dispatches it saw and those that reached the upstream; a dispatch without a marker counts under
 * the id {@code ""} and as {@link #unmarked}.
 */
public final class LoopbackRelay implements AutoCloseable {
  /** Headers of the HTTP/1.1 hop that Envoy does not forward as request headers. */
  private static final Set<String> HOP =
      Set.of("host", "content-length", "connection", "transfer-encoding", "upgrade");

  private static final String MARKER = "x-sluice-dispatch";

  /** One job as the relay saw it: first dispatch, attempts, upstream calls, last answer. */
  public static final class Job {
    public final AtomicLong firstDispatchMillis = new AtomicLong(-1);
    public final AtomicLong firstUpstreamMillis = new AtomicLong(-1);
    public final AtomicInteger dispatches = new AtomicInteger();
    public final AtomicInteger upstreamCalls = new AtomicInteger();
    public final AtomicInteger lastStatus = new AtomicInteger();
    public final AtomicLong lastAnswerMillis = new AtomicLong(-1);
  }

  private final HttpServer server;
  private final ExecutorService executor;
  private final Map<String, String> routeMetadata;
  private final Map<String, Job> jobs = new ConcurrentHashMap<>();
  private final AtomicLong unmarked = new AtomicLong();
  private final AtomicLong answered2xx = new AtomicLong();
  private volatile @Nullable Function<HttpRequest, CompletableFuture<HttpResult>> envoy;

  private LoopbackRelay(
      HttpServer server, ExecutorService executor, Map<String, String> routeMetadata) {
    this.server = server;
    this.executor = executor;
    this.routeMetadata = Map.copyOf(routeMetadata);
  }

  /**
   * Listens on a free port of 127.0.0.1; answers 503 until {@link #via} names its Envoy. Each
   * relayed request carries {@code routeMetadata} as the route's gRPC initial metadata (say, {@code
   * x-sluice-class: batch}, as the loopback route would set it).
   */
  public static LoopbackRelay start(Map<String, String> routeMetadata) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
    ExecutorService ex =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "loopback-relay");
              t.setDaemon(true);
              return t;
            });
    s.setExecutor(ex);
    LoopbackRelay relay = new LoopbackRelay(s, ex, routeMetadata);
    s.createContext("/", relay::handle);
    s.start();
    return relay;
  }

  /** The emulated Envoy the listener belongs to (its {@code sendAsync}), once it exists. */
  public void via(Function<HttpRequest, CompletableFuture<HttpResult>> envoy) {
    this.envoy = envoy;
  }

  /** The base URL for {@code intake.dispatch.url}. */
  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Jobs seen so far, by id. */
  public Map<String, Job> jobs() {
    return jobs;
  }

  /** Dispatches of job {@code id} this listener received. */
  public int dispatched(String id) {
    Job j = jobs.get(id);
    return j == null ? 0 : j.dispatches.get();
  }

  /** Dispatches of job {@code id} that reached the upstream through this listener. */
  public int reachedUpstream(String id) {
    Job j = jobs.get(id);
    return j == null ? 0 : j.upstreamCalls.get();
  }

  /** Dispatched requests that carried no marker (expected: none). */
  public long unmarked() {
    return unmarked.get();
  }

  /** Dispatches answered 2xx (the job then ends completed). */
  public long answered2xx() {
    return answered2xx.get();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      long now = System.currentTimeMillis();
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
      routeMetadata.forEach(b::routeGrpcInitialMetadata);
      String marker = "";
      for (var h : ex.getRequestHeaders().entrySet()) {
        String name = h.getKey().toLowerCase(Locale.ROOT);
        if (HOP.contains(name)) {
          continue;
        }
        for (String v : h.getValue()) {
          b.header(name, v);
        }
        if (name.equals(MARKER) && !h.getValue().isEmpty()) {
          marker = h.getValue().get(0);
        }
      }
      int dot = marker.indexOf('.');
      if (dot < 0) {
        unmarked.incrementAndGet();
      }
      Job job = jobs.computeIfAbsent(dot < 0 ? "" : marker.substring(0, dot), k -> new Job());
      job.firstDispatchMillis.compareAndSet(-1, now);
      job.dispatches.incrementAndGet();
      var e = envoy;
      if (e == null) {
        ex.sendResponseHeaders(503, -1);
        return;
      }
      HttpResult r = e.apply(b.build()).get(120, TimeUnit.SECONDS);
      if (r.upstreamRequest().isPresent()) {
        job.upstreamCalls.incrementAndGet();
        job.firstUpstreamMillis.compareAndSet(-1, System.currentTimeMillis());
      }
      job.lastStatus.set(r.status());
      job.lastAnswerMillis.set(System.currentTimeMillis());
      if (r.status() / 100 == 2) {
        answered2xx.incrementAndGet();
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
