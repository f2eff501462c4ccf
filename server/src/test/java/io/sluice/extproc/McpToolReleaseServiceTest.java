package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * When an MCP tool's slot comes back, on the server's own (fake) clock, through the real gRPC
 * adapter: a call holds its tool's slot from its admission to the end of its answer as Envoy sends
 * it (the last response body message), and not a tick longer. The next call is admitted the moment
 * the last body message is answered, with the clock not moved: no timer, sweep, renewal or store
 * round trip stands between the answer's end and the slot. The hold counted ({@code
 * sluice_mcp_tool_service_seconds}) is exactly the fake time between admission and that end.
 */
class McpToolReleaseServiceTest extends ExtProcServerTestBase {
  static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        mcp-control: {capacity: 1000000, maxRequests: 100}
        tool-pdf: {capacity: 1000000, maxRequests: 1, retryAfter: {min: 1s, max: 10s, jitter: 0.0}}
      classes:
        tools: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 30s, maxQueueWait: 2s,
                defaultOutputTokens: 16, maxOutputTokens: 64}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
      routes:
        - {name: mcp, match: {pathPrefix: /mcp}, pool: mcp-control, class: tools, format: auto}
      mcp: {enabled: true, routes: [mcp], tools: [{name: pdf_render, pool: tool-pdf}]}
      """;

  static final long TOOL_MILLIS = 200;

  final FakeTicker ticker = new FakeTicker();

  @Override
  protected String policy() {
    return CONFIG;
  }

  @Override
  protected Ticker ticker() {
    return ticker;
  }

  private static Map<String, String> mcpHeaders() {
    Map<String, String> h = new LinkedHashMap<>();
    h.put(":method", "POST");
    h.put(":path", "/mcp");
    h.put(":authority", "tools.example.com");
    h.put("content-type", "application/json");
    h.put("accept", "application/json, text/event-stream");
    return h;
  }

  private static String toolCall(int id) {
    return "{\"jsonrpc\":\"2.0\",\"id\":"
        + id
        + ",\"method\":\"tools/call\",\"params\":{\"name\":\"pdf_render\",\"arguments\":{}}}";
  }

  /** Sends one tools/call on a new stream; its answer to the request body. */
  private ExtProcTestClient.Call call(int id, ProcessingResponse[] answer) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", "acme"));
    c.send(headers(mcpHeaders(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    answer[0] = c.send(body(toolCall(id)));
    return c;
  }

  private static boolean admitted(ProcessingResponse r) {
    return r.hasRequestBody() && !r.hasImmediateResponse();
  }

  private static String refusal(ProcessingResponse r) {
    return r.getImmediateResponse().getBody().toString(StandardCharsets.UTF_8);
  }

  private Timer service() {
    return server
        .registry()
        .find(io.sluice.observability.McpMetrics.SERVICE)
        .tag("tool", "pdf_render")
        .timer();
  }

  @Test
  void jsonAnswer_slotBackAtTheLastBodyMessage_notATickLater() throws Exception {
    ProcessingResponse[] a = new ProcessingResponse[1];
    ExtProcTestClient.Call first = call(1, a);
    assertThat(admitted(a[0])).as(a[0].toString()).isTrue();

    ExtProcTestClient.Call shed = call(2, a); // the slot is taken: shed at once
    assertThat(refusal(a[0])).contains("TOOL_BACKPRESSURE");
    shed.reset();

    ticker.advance(Duration.ofMillis(TOOL_MILLIS)); // the tool's service time, on the fake clock
    first.send(responseHeaders(200, "application/json", false));
    ExtProcTestClient.Call notYet = call(3, a); // headers seen, body not: still held
    assertThat(refusal(a[0])).contains("TOOL_BACKPRESSURE");
    notYet.reset();
    first.send(
        responseBody(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
                + "\"text\":\"ok\"}]}}",
            true));

    // the clock has not moved: the slot is back as the last body message was answered
    ExtProcTestClient.Call next = call(4, a);
    assertThat(admitted(a[0])).as("admitted at the answer's end: " + a[0]).isTrue();
    Timer held = service();
    assertThat(held.count()).isEqualTo(1);
    assertThat(held.max(TimeUnit.MILLISECONDS)).isEqualTo((double) TOOL_MILLIS);
    first.reset();
    next.reset();
  }

  @Test
  void sseAnswer_slotHeldToTheStreamsEnd_thenBackAtOnce() throws Exception {
    ProcessingResponse[] a = new ProcessingResponse[1];
    ExtProcTestClient.Call first = call(1, a);
    assertThat(admitted(a[0])).isTrue();

    first.send(responseHeaders(200, "text/event-stream", false));
    first.send(responseBody(": open\n\n", false));
    ticker.advance(Duration.ofMillis(TOOL_MILLIS));
    ExtProcTestClient.Call midStream = call(2, a); // the stream is open: the slot is held
    assertThat(refusal(a[0])).contains("TOOL_BACKPRESSURE");
    midStream.reset();

    first.send(
        responseBody(
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", true));
    ExtProcTestClient.Call next = call(3, a);
    assertThat(admitted(a[0])).as("admitted at the stream's end: " + a[0]).isTrue();
    assertThat(service().max(TimeUnit.MILLISECONDS)).isEqualTo((double) TOOL_MILLIS);
    first.reset();
    next.reset();
  }
}
