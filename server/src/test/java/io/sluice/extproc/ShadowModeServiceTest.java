package io.sluice.extproc;

import static io.sluice.extproc.ExtProcServerTestBase.chat;
import static io.sluice.extproc.ExtProcServerTestBase.header;
import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Struct;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shadow mode on the ext_proc path of a real server: the answers Envoy gets (admit with the
 * would-be decision in the metadata and the decision header; a pass at request headers answered at
 * the body), and a hot reload of the policy file from enforce to shadow and back with permits in
 * flight: every permit is released exactly once, a shadow pass never counts in the ledger.
 */
class ShadowModeServiceTest {
  @TempDir Path dir;
  private Path file;
  private SluiceServer server;
  private ExtProcTestClient client;

  private static String policy(String mode) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h, warmup: {enabled: false}}
        pools: {gpu: {capacity: 100000, maxRequests: 1, mode: %s}}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
        tiers:
          metered: {weight: 1, rpm: 1}
          pro: {weight: 1}
        tenants: {anonymousTier: pro, unknownTier: pro, known: {carol: {tier: metered}}}
        signals: {tenant: [{metadata: x-sluice-tenant}]}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        responses: {decisionHeader: true}
        """
        .formatted(mode);
  }

  @BeforeEach
  void start() throws Exception {
    file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy("enforce"));
    server =
        SluiceServer.start(
            ConfigLoader.load(file),
            new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()));
    client = new ExtProcTestClient(server.grpcPort());
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    server.close();
  }

  private void switchTo(String mode) throws Exception {
    Files.writeString(file, policy(mode));
    assertThat(server.reloadIfChanged()).isTrue();
    assertThat(server.config().poolMode("gpu").configName()).isEqualTo(mode);
  }

  /** A BUFFERED chat request up to its decision; the answer to the deciding message. */
  private ProcessingResponse decide(ExtProcTestClient.Call c) throws Exception {
    ProcessingResponse h =
        c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    if (h.hasImmediateResponse()) {
      return h;
    }
    assertThat(h.hasRequestHeaders()).isTrue();
    return c.send(
        body(
            "{\"model\":\"gpt-4o\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
  }

  private ExtProcTestClient.Call open(String tenant) {
    return client.open(Map.of("x-sluice-tenant", tenant));
  }

  /** The response finishes and Envoy resets the stream, as after every request. */
  private static void finish(ExtProcTestClient.Call c) throws Exception {
    c.send(responseHeaders(200, "application/json", false));
    c.send(
        responseBody(
            "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}", true));
    c.reset();
  }

  private int inFlight() {
    return server.runtime().controller().pool("gpu").snapshot(0).requestsInFlight();
  }

  private double released() {
    return server.registry().find("sluice.permits.released").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  /** Requests whose end recorded the usage the upstream reported (permit or shadow pass). */
  private long actualUsages() {
    return server
        .registry()
        .find("sluice.tokens.actual")
        .tag("direction", "input")
        .summaries()
        .stream()
        .mapToLong(io.micrometer.core.instrument.DistributionSummary::count)
        .sum();
  }

  private double shadowed(String would, String reason) {
    Counter c =
        server
            .registry()
            .find("sluice.shadow.decisions")
            .tags("would", would, "reason", reason)
            .counter();
    return c == null ? 0 : c.count();
  }

  private static Struct sluice(ProcessingResponse r) {
    return r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
  }

  private static Map<String, String> setHeaders(ProcessingResponse r) {
    Map<String, String> m = new HashMap<>();
    for (HeaderValueOption o :
        r.getRequestBody().getResponse().getHeaderMutation().getSetHeadersList()) {
      m.put(o.getHeader().getKey(), o.getHeader().getRawValue().toString(StandardCharsets.UTF_8));
    }
    return m;
  }

  @Test
  void hotReload_enforceShadowEnforce_withPermitsInFlight_eachReleasedOnce() throws Exception {
    // enforce: A runs, B is refused
    ExtProcTestClient.Call a = open("acme");
    assertThat(decide(a).hasRequestBody()).isTrue();
    ProcessingResponse b = decide(open("acme"));
    assertThat(b.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(header(b, "x-sluice-reason")).isEqualTo("pool_saturated");

    switchTo("shadow"); // A's permit keeps counting
    assertThat(inFlight()).isEqualTo(1);
    ExtProcTestClient.Call c = open("acme");
    ProcessingResponse cAnswer = decide(c);
    assertThat(cAnswer.hasRequestBody()).as("admitted: nothing refused in shadow").isTrue();
    assertThat(sluice(cAnswer).getFieldsOrThrow("decision").getStringValue()).isEqualTo("admit");
    assertThat(sluice(cAnswer).getFieldsOrThrow("mode").getStringValue()).isEqualTo("shadow");
    assertThat(sluice(cAnswer).getFieldsOrThrow("would").getStringValue()).isEqualTo("reject");
    assertThat(sluice(cAnswer).getFieldsOrThrow("would_reason").getStringValue())
        .isEqualTo("pool_saturated");
    assertThat(setHeaders(cAnswer))
        .containsEntry("x-sluice-decision", "would_reject")
        .containsEntry("x-sluice-reason", "pool_saturated");
    assertThat(inFlight()).as("a shadow pass holds no permit").isEqualTo(1);

    finish(a); // A's permit: released once
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);
    assertThat(released()).isEqualTo(1);
    ExtProcTestClient.Call d = open("acme"); // enforcement would admit it: it takes the permit
    ProcessingResponse dAnswer = decide(d);
    assertThat(dAnswer.hasRequestBody()).isTrue();
    assertThat(sluice(dAnswer).containsFields("mode")).isFalse();
    assertThat(setHeaders(dAnswer)).containsEntry("x-sluice-decision", "admit");
    assertThat(inFlight()).isEqualTo(1);

    switchTo("enforce"); // D's permit keeps counting, C runs on without one
    ProcessingResponse e = decide(open("acme"));
    assertThat(e.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    long ended = actualUsages();
    finish(c); // the shadow pass ends (its usage is counted): no permit released, ledger unchanged
    await().atMost(Duration.ofSeconds(5)).until(() -> actualUsages() == ended + 1);
    assertThat(inFlight()).isEqualTo(1);
    assertThat(released()).isEqualTo(1);
    finish(d);
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);
    assertThat(released()).isEqualTo(2);
    ExtProcTestClient.Call f = open("acme");
    assertThat(decide(f).hasRequestBody()).isTrue();
    finish(f);
    await().atMost(Duration.ofSeconds(5)).until(() -> released() == 3);
    assertThat(inFlight()).isZero();
    assertThat(shadowed("reject", "pool_saturated")).isEqualTo(1);
    assertThat(
            server
                .registry()
                .find("sluice.decisions")
                .tags("decision", "reject", "reason", "pool_saturated")
                .counter()
                .count())
        .isEqualTo(2); // B and E: the shadow pass counted as admitted
  }

  @Test
  void shadowPassAtRequestHeaders_isAnsweredAtTheBody() throws Exception {
    switchTo("shadow");
    ExtProcTestClient.Call first = open("carol"); // one request a minute
    assertThat(decide(first).hasRequestBody()).isTrue();
    finish(first);
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);

    ExtProcTestClient.Call second = open("carol");
    ProcessingResponse h =
        second.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(h.hasRequestHeaders()).as("CONTINUE: the body decides for Envoy").isTrue();
    ProcessingResponse b =
        second.send(
            body("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
    assertThat(b.hasRequestBody()).isTrue();
    assertThat(sluice(b).getFieldsOrThrow("would_reason").getStringValue())
        .isEqualTo("tenant_rate");
    assertThat(setHeaders(b)).containsEntry("x-sluice-decision", "would_reject");
    assertThat(inFlight()).isZero();
    finish(second); // the response flows as for any admitted request
    assertThat(shadowed("reject", "tenant_rate")).isEqualTo(1);
    assertThat(released()).isEqualTo(1); // only the first request held a permit
  }
}
