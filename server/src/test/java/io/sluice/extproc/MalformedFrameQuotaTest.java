package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A malformed frame while queued refunds the tenant's token reservation, as a cancel does. */
class MalformedFrameQuotaTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu: {capacity: 100000, maxRequests: 1, maxMessageTimeout: 5s, holdMargin: 200ms,
              defaultServiceTime: 1s, retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 3s, deadline: 30s,
                      queue: {tenantShare: 1.0}, defaultOutputTokens: 100, maxOutputTokens: 1000}
      tiers:
        limited: {weight: 1, inputTpm: 1000000, outputTpm: 600}
      tenants: {anonymousTier: limited, unknownTier: limited}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  private RawExtProcClient raw;

  @Override
  protected String policy() {
    return CONFIG;
  }

  @BeforeEach
  void rawClient() {
    raw = new RawExtProcClient(server.grpcPort());
  }

  @AfterEach
  void closeRaw() throws Exception {
    raw.close();
  }

  private static String chatBody(int maxTokens) {
    return "{\"model\":\"llama\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  private static int inFlight(ExtProcServerTestBase t) {
    return t.server
        .runtime()
        .controller()
        .pool("gpu")
        .snapshot(t.server.runtime().ticker().nanos())
        .requestsInFlight();
  }

  @Test
  void malformedWhileQueued_refundsTheTokenReservation() throws Exception {
    RawExtProcClient.Call holder = raw.open();
    holder.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(holder.send(body(chatBody(100))).hasRequestBody()).isTrue(); // 100 of 600

    RawExtProcClient.Call queued = raw.open();
    queued.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse hold = queued.send(body(chatBody(500))); // reserves 500: 600 of 600
    assertThat(hold.hasOverrideMessageTimeout()).as(hold.toString()).isTrue();
    queued.sendOnly(RawExtProcClient.truncated(responseHeaders(200, "text/plain", false), 2));
    assertThat(queued.awaitClose().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);

    holder.reset(); // the first request went upstream: its 100 stay charged
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight(this) == 0);

    // 100 + 500 fits only if the malformed stream's 500 were given back.
    RawExtProcClient.Call next = raw.open();
    next.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r = next.send(body(chatBody(500)));
    assertThat(r.hasRequestBody()).as(r.toString()).isTrue();
    next.reset();
  }
}
