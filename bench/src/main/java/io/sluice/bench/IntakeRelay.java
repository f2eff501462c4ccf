package io.sluice.bench;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.Rig;
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
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The Envoy loopback listener of background intake's dispatch (docs/intake.md, "The loopback
 * listener") for the benchmarks: an HTTP/1.1 listener on 127.0.0.1 that sends each dispatched job
 * through the emulated Envoy ({@link Rig#sendAsync}: ext_proc on the replica the balancer picks,
 * then the simulated upstream), with the per-route metadata of the create route ({@code
 * x-sluice-class}) and the dispatcher's headers untouched (trusted on this listener), and answers
 * the dispatcher with what Envoy answered. It counts, per job id (the {@code x-sluice-dispatch}
 * marker starts with it), the attempts that reached the upstream: a job run twice shows as two.
 */
final class IntakeRelay implements AutoCloseable {
  /** Headers of the HTTP/1.1 hop that Envoy does not forward as request headers. */
  private static final Set<String> HOP =
      Set.of("host", "content-length", "connection", "transfer-encoding", "upgrade");

  /** One job as the relay saw it: first dispatch, attempts, upstream calls, last answer. */
  static final class Job {
    final AtomicLong firstDispatchMillis = new AtomicLong(-1);
    final AtomicLong firstUpstreamMillis = new AtomicLong(-1);
    final AtomicInteger dispatches = new AtomicInteger();
    final AtomicInteger upstreamCalls = new AtomicInteger();
    final AtomicInteger lastStatus = new AtomicInteger();
    final AtomicLong lastAnswerMillis = new AtomicLong(-1);
  }

  private final HttpServer server;
  private final ExecutorService executor;
  private final Holder holder;
  private final String sluiceClass;
  private final Map<String, Job> jobs = new ConcurrentHashMap<>();
  private final AtomicLong unmarked = new AtomicLong();
  private final AtomicLong answered2xx = new AtomicLong();

  /** The rig the relay sends through, set once it exists (it needs the relay's URL first). */
  static final class Holder {
    volatile @Nullable Rig rig;
  }

  private IntakeRelay(
      HttpServer server, ExecutorService executor, Holder holder, String sluiceClass) {
    this.server = server;
    this.executor = executor;
    this.holder = holder;
    this.sluiceClass = sluiceClass;
  }

  /** Listens on 127.0.0.1 (a free port) and relays to {@code rig}'s rig. */
  static IntakeRelay start(Holder rig, String sluiceClass) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
    ExecutorService ex =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "intake-relay");
              t.setDaemon(true);
              return t;
            });
    s.setExecutor(ex);
    IntakeRelay relay = new IntakeRelay(s, ex, rig, sluiceClass);
    s.createContext("/", relay::handle);
    s.start();
    return relay;
  }

  /** The base URL for {@code intake.dispatch.url}. */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Jobs seen so far, by id. */
  Map<String, Job> jobs() {
    return jobs;
  }

  /** Dispatched requests that carried no marker (expected: none). */
  long unmarked() {
    return unmarked.get();
  }

  /** Dispatches answered 2xx (the job then ends completed). */
  long answered2xx() {
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
              .bodyChunk(body)
              .routeGrpcInitialMetadata("x-sluice-class", sluiceClass);
      String marker = null;
      for (var h : ex.getRequestHeaders().entrySet()) {
        String name = h.getKey().toLowerCase(Locale.ROOT);
        if (HOP.contains(name)) {
          continue;
        }
        for (String v : h.getValue()) {
          b.header(name, v);
        }
        if (name.equals("x-sluice-dispatch") && !h.getValue().isEmpty()) {
          marker = h.getValue().get(0);
        }
      }
      Job job = null;
      if (marker == null || marker.indexOf('.') < 0) {
        unmarked.incrementAndGet();
      } else {
        job = jobs.computeIfAbsent(marker.substring(0, marker.indexOf('.')), k -> new Job());
        job.firstDispatchMillis.compareAndSet(-1, now);
        job.dispatches.incrementAndGet();
      }
      Rig rig = holder.rig;
      if (rig == null) {
        ex.sendResponseHeaders(503, -1);
        return;
      }
      HttpResult r = rig.sendAsync(b.build()).get(120, TimeUnit.SECONDS);
      if (job != null) {
        if (r.upstreamRequest().isPresent()) {
          job.upstreamCalls.incrementAndGet();
          job.firstUpstreamMillis.compareAndSet(-1, System.currentTimeMillis());
        }
        job.lastStatus.set(r.status());
        job.lastAnswerMillis.set(System.currentTimeMillis());
      }
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
