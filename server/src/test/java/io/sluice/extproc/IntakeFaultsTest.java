package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Background intake's faults end to end (docs/intake.md, "Dispatch"): real servers, their
 * dispatchers running, and a local HTTP server on 127.0.0.1 standing in for Envoy's loopback
 * listener. Unlike {@link IntakeDispatchTest}'s, this listener hands each dispatched request to the
 * test, which decides what happens to it: admitted through a replica's ext_proc and answered by the
 * "model" (a status and body of the test's choosing), or held (a replica that dies mid-dispatch
 * never hears back). A replica killed mid-dispatch: its job is claimed again by another replica
 * after the lease and completed once; the upstream failing a job: {@code failed} with the
 * upstream's typed error; a client cancelling while its job waits and while it runs.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IntakeFaultsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SECRET = "faults-dispatch-secret-32-characters";
  private static final String MODEL_ANSWER =
      "{\"id\":\"resp_from_the_model\",\"object\":\"response\",\"status\":\"completed\","
          + "\"model\":\"m1\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
          + "\"content\":[{\"type\":\"output_text\",\"text\":\"the report\"}]}]}";

  /** What the test does with one dispatched request. */
  private record Action(ExtProcTestClient via, int status, String body) {}

  /** One dispatched request, waiting at the listener for the test's {@link Action}. */
  private record Dispatched(
      Map<String, String> headers, String body, CompletableFuture<Action> action) {
    String jobId() {
      String m = headers.getOrDefault("x-sluice-dispatch", "");
      return m.indexOf('.') < 0 ? "" : m.substring(0, m.indexOf('.'));
    }
  }

  private final BlockingQueue<Dispatched> dispatched = new LinkedBlockingQueue<>();
  private final List<Dispatched> all = new ArrayList<>();
  private final AtomicInteger modelCalls = new AtomicInteger();
  private final List<SluiceServer> servers = new ArrayList<>();
  private final List<ExtProcTestClient> clients = new ArrayList<>();
  private final ExecutorService listenerThreads = Executors.newCachedThreadPool();
  private HttpServer listener;

  private void startListener() throws IOException {
    listener = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    listener.setExecutor(listenerThreads);
    listener.createContext("/", this::relay);
    listener.start();
  }

  @AfterEach
  void stop() throws Exception {
    synchronized (all) {
      for (Dispatched d : all) { // a held request: the listener lets go (nobody listens any more)
        d.action().complete(null);
      }
    }
    for (ExtProcTestClient c : clients) {
      c.close();
    }
    for (SluiceServer s : servers) {
      s.close();
    }
    if (listener != null) {
      listener.stop(0);
    }
    listenerThreads.shutdownNow();
  }

  private String policy(String store, int maxInFlight) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
        pools: {gpu: {capacity: 1000000}}
        classes:
          interactive: {rank: 0, reservedShare: 0.8, defaultOutputTokens: 10, maxOutputTokens: 100}
          batch: {rank: 1, borrow: true, defaultOutputTokens: 10, maxOutputTokens: 100}
        signals: {tenant: [{header: x-tenant-id}]}
        routes:
          - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
        %s
        intake:
          enabled: true
          classes: [batch]
          dispatch:
            url: http://127.0.0.1:%d
            markerKeyEnv: SLUICE_DISPATCH_SECRET
            headers: {x-tenant-id: tenant}
            timeout: 2s
            lease: 3s
            maxInFlight: %d
        """
        .formatted(store, listener.getAddress().getPort(), maxInFlight);
  }

  private ExtProcTestClient startServer(String policy) throws Exception {
    SluiceServer s =
        SluiceServer.start(
            ConfigLoader.parse(policy),
            new SluiceServer.Options(
                null,
                Map.of("SLUICE_DISPATCH_SECRET", SECRET),
                Ticker.system(),
                Clock.systemUTC()));
    servers.add(s);
    ExtProcTestClient c = new ExtProcTestClient(s.grpcPort());
    clients.add(c);
    return c;
  }

  /** The listener: hands the request to the test, then does what it says. */
  private void relay(HttpExchange ex) throws IOException {
    try (ex) {
      Map<String, String> h = LoopbackRelay.envoyHeaders(ex);
      String reqBody = LoopbackRelay.bodyOf(ex);
      Dispatched d = new Dispatched(h, reqBody, new CompletableFuture<>());
      synchronized (all) {
        all.add(d);
      }
      dispatched.add(d);
      Action a = d.action().get(50, TimeUnit.SECONDS);
      if (a == null) {
        return; // held to the end: the connection just closes
      }
      ExtProcTestClient.Call c = a.via().open(Map.of());
      ProcessingResponse r = LoopbackRelay.decide(c, h, reqBody);
      if (r.hasImmediateResponse()) { // refused by Sluice: its answer goes back as it is
        LoopbackRelay.refuse(ex, r.getImmediateResponse(), c);
        return;
      }
      modelCalls.incrementAndGet(); // admitted: the request reaches the model
      c.send(ExtProcTestClient.responseHeaders(a.status(), "application/json", true));
      c.halfClose();
      byte[] b = a.body().getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().add("content-type", "application/json");
      ex.sendResponseHeaders(a.status(), b.length);
      ex.getResponseBody().write(b);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      // the test ended (or its replica died) while this request was held
    }
  }

  private static String post(ExtProcTestClient client, String tenant) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", tenant);
    h.put(":path", "/v1/responses");
    ProcessingResponse r = c.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.NONE));
    assertThat(r.hasRequestHeaders()).isTrue();
    ProcessingResponse accepted =
        c.send(body("{\"model\":\"m1\",\"input\":\"write a report\",\"background\":true}"));
    assertThat(accepted.hasImmediateResponse()).isTrue();
    JsonNode queued = json(accepted.getImmediateResponse());
    assertThat(queued.get("status").asText()).isEqualTo("queued");
    return queued.get("id").asText();
  }

  private static JsonNode operation(ExtProcTestClient client, String method, String path)
      throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", "acme");
    h.put(":method", method);
    h.put(":path", path);
    ImmediateResponse ir = c.send(headers(h, true, null, null)).getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(200);
    return json(ir);
  }

  /**
   * Until the replica answers the status route (a replica on Redis may take a moment to get its
   * share and answer its first stream): an unknown id, 404.
   */
  private static void awaitServing(ExtProcTestClient client) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      try {
        ExtProcTestClient.Call c = client.open(Map.of());
        Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", "acme");
        h.put(":method", "GET");
        h.put(":path", "/v1/responses/resp_" + "0".repeat(32));
        if (c.send(headers(h, true, null, null)).getImmediateResponse().getStatus().getCodeValue()
            == 404) {
          return;
        }
      } catch (AssertionError | RuntimeException e) {
        if (System.nanoTime() - until > 0) {
          throw e;
        }
      }
      Thread.sleep(200);
    }
  }

  private static JsonNode read(ExtProcTestClient client, String id) throws Exception {
    return operation(client, "GET", "/v1/responses/" + id);
  }

  private static JsonNode awaitDone(ExtProcTestClient client, String id) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    JsonNode v = read(client, id);
    while (!done(v) && System.nanoTime() - until < 0) {
      Thread.sleep(50);
      v = read(client, id);
    }
    return v;
  }

  private static boolean done(JsonNode v) {
    String s = v.get("status").asText();
    return !s.equals("queued") && !s.equals("in_progress");
  }

  private static JsonNode json(ImmediateResponse ir) throws Exception {
    return JSON.readTree(ir.getBody().toString(StandardCharsets.UTF_8));
  }

  private Dispatched next() throws InterruptedException {
    Dispatched d = dispatched.poll(15, TimeUnit.SECONDS);
    assertThat(d).as("a dispatched request").isNotNull();
    return d;
  }

  @Test
  void aReplicaKilledMidDispatch_itsJobIsReclaimedByAnother_andCompletedOnce() throws Exception {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    startListener();
    String store =
        "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \"127.0.0.1:6379\"}}\n"
            + "quotas: {keyPrefix: "
            + LocalRedis.uniquePrefix()
            + "}\nreplicas: {leaseTtl: 2s, renewInterval: 100ms}";
    String policy = policy(store, 1);
    ExtProcTestClient a = startServer(policy);
    awaitServing(a);
    String id = post(a, "acme");

    Dispatched first = next(); // replica A claimed it and sent it: A dies before any answer
    assertThat(first.jobId()).isEqualTo(id);
    servers.get(0).halt();
    ExtProcTestClient b = startServer(policy);
    awaitServing(b);
    // claimed by A, its request never admitted (held at the listener): it reads queued, not
    // in_progress (a job is in_progress only once its dispatched request is admitted)
    assertThat(read(b, id).get("status").asText()).isEqualTo("queued");

    Dispatched second = next(); // B claimed it again once A's lease (3 s) lapsed
    assertThat(second.jobId()).isEqualTo(id);
    second.action().complete(new Action(b, 200, MODEL_ANSWER));
    JsonNode done = awaitDone(b, id);
    assertThat(done.get("status").asText()).isEqualTo("completed");
    assertThat(done.get("id").asText()).isEqualTo(id);
    assertThat(done.at("/output/0/content/0/text").asText()).isEqualTo("the report");

    assertThat(dispatched.poll(1500, TimeUnit.MILLISECONDS)).isNull(); // never a third time
    first.action().complete(null); // A's connection closes: A is gone, nothing changes
    Thread.sleep(300);
    assertThat(read(b, id).get("status").asText()).isEqualTo("completed");
    assertThat(modelCalls.get()).isEqualTo(1);
  }

  @Test
  void theUpstreamFailingAJob_endsItFailed_withTheUpstreamsTypedError() throws Exception {
    startListener();
    ExtProcTestClient c = startServer(policy("", 1));
    String id = post(c, "acme");
    Dispatched d = next();
    d.action()
        .complete(
            new Action(
                c,
                502,
                "{\"error\":{\"code\":\"engine_down\",\"message\":\"engine restarting\"}}"));
    JsonNode done = awaitDone(c, id);
    assertThat(done.get("status").asText()).isEqualTo("failed");
    assertThat(done.at("/error/code").asText()).isEqualTo("upstream_error");
    assertThat(done.at("/error/message").asText()).contains("502").contains("engine_down");
    assertThat(modelCalls.get()).isEqualTo(1);
    assertThat(dispatched.poll(1500, TimeUnit.MILLISECONDS)).isNull(); // a failed job stays so
  }

  @Test
  void aClientCancelling_whileItsJobWaits_andWhileItRuns() throws Exception {
    startListener();
    ExtProcTestClient c = startServer(policy("", 1)); // one job at a time: the second waits
    String running = post(c, "acme");
    Dispatched d = next();
    assertThat(d.jobId()).isEqualTo(running);
    String waiting = post(c, "acme");
    assertThat(read(c, waiting).get("status").asText()).isEqualTo("queued");

    JsonNode cancelledWaiting = operation(c, "POST", "/v1/responses/" + waiting + "/cancel");
    assertThat(cancelledWaiting.get("status").asText()).isEqualTo("cancelled");
    JsonNode cancelledRunning = operation(c, "POST", "/v1/responses/" + running + "/cancel");
    assertThat(cancelledRunning.get("status").asText()).isEqualTo("cancelled");

    d.action().complete(new Action(c, 200, MODEL_ANSWER)); // the answer comes all the same
    Thread.sleep(500);
    JsonNode after = read(c, running);
    assertThat(after.get("status").asText()).isEqualTo("cancelled");
    assertThat(after.toString()).doesNotContain("the report"); // its result was not kept
    // the cancelled waiting job never runs, though the pool has room again
    assertThat(dispatched.poll(2500, TimeUnit.MILLISECONDS)).isNull();
    assertThat(read(c, waiting).get("status").asText()).isEqualTo("cancelled");
  }
}
