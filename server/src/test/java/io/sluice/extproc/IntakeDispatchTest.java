package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;

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
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Background intake end to end: a real server (in-memory store, its dispatcher running) and a local
 * HTTP server on 127.0.0.1 standing in for the Envoy loopback listener: it hands each dispatched
 * request to Sluice over ext_proc as Envoy would (headers, then the buffered body) and, when Sluice
 * admits it, answers as the simulated model. A background request is queued, dispatched when the
 * pool has room, completed, and its result read through the status route; a forged marker is
 * refused.
 */
class IntakeDispatchTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SECRET = "e2e-dispatch-secret-32-characters";
  private static final String MODEL_ANSWER =
      "{\"id\":\"resp_from_the_model\",\"object\":\"response\",\"status\":\"completed\","
          + "\"model\":\"m1\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
          + "\"content\":[{\"type\":\"output_text\",\"text\":\"the report\"}]}]}";

  /** What the listener saw of one dispatched request, and what Sluice decided on it. */
  private record Relayed(Map<String, String> headers, String body, String decision) {}

  private final BlockingQueue<Relayed> relayed = new LinkedBlockingQueue<>();
  private HttpServer listener;
  private SluiceServer server;
  private volatile ExtProcTestClient client;

  @BeforeEach
  void start() throws Exception {
    listener = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    listener.createContext("/", this::relay);
    listener.start();
    String policy =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
        pools: {gpu: {capacity: 1000000}}
        classes:
          interactive: {rank: 0, reservedShare: 0.8, defaultOutputTokens: 10, maxOutputTokens: 100}
          batch: {rank: 1, borrow: true, defaultOutputTokens: 10, maxOutputTokens: 100}
        signals: {tenant: [{header: x-tenant-id}]}
        routes:
          - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
        intake:
          enabled: true
          classes: [batch]
          dispatch:
            url: http://127.0.0.1:%d
            markerKeyEnv: SLUICE_DISPATCH_SECRET
            headers: {x-tenant-id: tenant}
            timeout: 10s
            lease: 60s
        """
            .formatted(listener.getAddress().getPort());
    server =
        SluiceServer.start(
            ConfigLoader.parse(policy),
            new SluiceServer.Options(
                null,
                Map.of("SLUICE_DISPATCH_SECRET", SECRET),
                Ticker.system(),
                Clock.systemUTC()));
    client = new ExtProcTestClient(server.grpcPort());
  }

  @AfterEach
  void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
    listener.stop(0);
  }

  /** The stand-in for Envoy's loopback listener: ext_proc first, then the model if admitted. */
  private void relay(HttpExchange ex) throws IOException {
    try {
      Map<String, String> h = LoopbackRelay.envoyHeaders(ex);
      String reqBody = LoopbackRelay.bodyOf(ex);
      ExtProcTestClient.Call c = client.open(Map.of());
      ProcessingResponse r = LoopbackRelay.decide(c, h, reqBody);
      if (r.hasImmediateResponse()) {
        relayed.add(new Relayed(h, reqBody, "refused"));
        LoopbackRelay.refuse(ex, r.getImmediateResponse(), c);
        return;
      }
      var md = r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
      relayed.add(new Relayed(h, reqBody, md.getFieldsOrThrow("decision").getStringValue()));
      // admitted: the simulated model answers, and Envoy tells Sluice the response's end
      c.send(ExtProcTestClient.responseHeaders(200, "application/json", true));
      c.halfClose();
      byte[] b = MODEL_ANSWER.getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().add("content-type", "application/json");
      ex.sendResponseHeaders(200, b.length);
      ex.getResponseBody().write(b);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ex.sendResponseHeaders(500, -1);
    } finally {
      ex.close();
    }
  }

  private ProcessingResponse post(String tenant, String json) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", tenant);
    h.put(":path", "/v1/responses");
    ProcessingResponse r = c.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.NONE));
    assertThat(r.hasRequestHeaders()).isTrue();
    return c.send(body(json));
  }

  private ImmediateResponse get(String id, String tenant) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", tenant);
    h.put(":method", "GET");
    h.put(":path", "/v1/responses/" + id);
    return c.send(headers(h, true, null, null)).getImmediateResponse();
  }

  private static JsonNode json(ImmediateResponse ir) throws Exception {
    return JSON.readTree(ir.getBody().toString(StandardCharsets.UTF_8));
  }

  @Test
  void backgroundRequest_queued_dispatched_completed_andReadThroughTheStatusRoute()
      throws Exception {
    ProcessingResponse accepted =
        post("acme", "{\"model\":\"m1\",\"input\":\"write a report\",\"background\":true}");
    assertThat(accepted.hasImmediateResponse()).isTrue();
    JsonNode queued = json(accepted.getImmediateResponse());
    assertThat(queued.get("status").asText()).isEqualTo("queued");
    String id = queued.get("id").asText();

    // the dispatcher's next step (every second) finds room and sends it through the listener
    Relayed r = relayed.poll(10, TimeUnit.SECONDS);
    assertThat(r).isNotNull();
    assertThat(r.decision()).isEqualTo("admit"); // admitted against batch, not taken in again
    assertThat(r.headers()).containsEntry("x-tenant-id", "acme");
    assertThat(r.headers().get("x-sluice-dispatch")).startsWith(id + ".");
    assertThat(JSON.readTree(r.body()).get("background").asBoolean()).isFalse();

    JsonNode done = null;
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() - until < 0) {
      ImmediateResponse read = get(id, "acme");
      assertThat(read.getStatus().getCodeValue()).isEqualTo(200);
      done = json(read);
      if (!done.get("status").asText().equals("queued")
          && !done.get("status").asText().equals("in_progress")) {
        break;
      }
      Thread.sleep(50);
    }
    assertThat(done).isNotNull();
    assertThat(done.get("status").asText()).isEqualTo("completed");
    assertThat(done.get("id").asText()).isEqualTo(id);
    assertThat(done.at("/output/0/content/0/text").asText()).isEqualTo("the report");
    assertThat(get(id, "globex").getStatus().getCodeValue()).isEqualTo(404);
    assertThat(relayed.poll(1500, TimeUnit.MILLISECONDS)).isNull(); // run once
  }

  @Test
  void forgedMarker_refused403() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = ExtProcServerTestBase.chat("x-tenant-id", "acme");
    h.put(":path", "/v1/responses");
    h.put(
        "x-sluice-dispatch",
        "resp_0123456789abcdef0123456789abcdef.99999999999999." + "0".repeat(64));
    ProcessingResponse r = c.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.NONE));
    assertThat(r.hasImmediateResponse()).isTrue();
    ImmediateResponse ir = r.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(403);
    assertThat(ExtProcServerTestBase.headersOf(ir))
        .containsEntry("x-sluice-reason", "dispatch_marker_invalid");
    assertThat(ir.getBody().toString(StandardCharsets.UTF_8)).doesNotContain("0000000000");
  }
}
