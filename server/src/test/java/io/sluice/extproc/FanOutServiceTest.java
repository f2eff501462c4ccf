package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.core.quota.WorkflowBudget;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Fan-out through the real gRPC adapter: the tools and the declared calls priced into the work, and
 * a workflow's budget ({@code pools.<name>.workflow.maxRequests}): the (maxRequests+1)-th
 * concurrent request of one workflow gets 429 {@code fanout_budget} while another workflow is
 * admitted, and the place comes back on cancel (queued and admitted) and on response end.
 */
class FanOutServiceTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu:
          capacity: 100000
          maxRequests: 4
          maxMessageTimeout: 5s
          retryAfter: {min: 1s, max: 30s, jitter: 0.0}
          fanout: {perTool: 10, toolChoiceRequired: 100, parallelToolCalls: 1000, perDeclaredCall: 5000}
          workflow: {maxRequests: 2}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 4s, deadline: 30s, queue: {tenantShare: 1.0},
                      defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
        workflow: [{metadata: x-sluice-workflow}]
        fanout: [{metadata: x-sluice-fanout}]
      responses: {estimateHeader: true}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  private static final String CHAT =
      "{\"model\":\"llama\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  @Override
  protected String policy() {
    return CONFIG;
  }

  private WorkflowBudget workflows() {
    return server.runtime().sessions().workflows();
  }

  private ExtProcTestClient.Call open(String workflow) {
    return client.open(workflow == null ? Map.of() : Map.of("x-sluice-workflow", workflow));
  }

  /** Sends headers and body; returns the body's answer. */
  private static ProcessingResponse send(ExtProcTestClient.Call c, String body) throws Exception {
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    return c.send(body(body));
  }

  private static void end(ExtProcTestClient.Call c) throws Exception {
    c.send(responseHeaders(200, "application/json", false));
    c.send(responseBody("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}", true));
  }

  private static String estimateHeader(ProcessingResponse r) {
    return r.getRequestBody().getResponse().getHeaderMutation().getSetHeadersList().stream()
        .filter(o -> o.getHeader().getKey().equals("x-sluice-estimate"))
        .map(o -> o.getHeader().getRawValue().toString(StandardCharsets.UTF_8))
        .findFirst()
        .orElseThrow();
  }

  private static long work(ProcessingResponse r) {
    String h = estimateHeader(r);
    return Long.parseLong(h.substring(h.indexOf("work=") + 5));
  }

  private double refusals() {
    var c = server.registry().find("sluice.decisions").tag("reason", "fanout_budget").counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void fanOut_addsTheToolsAndTheDeclaredCallsToTheWork() throws Exception {
    ProcessingResponse plain = send(open(null), CHAT);
    String tools =
        "{\"model\":\"llama\",\"max_tokens\":10,\"tool_choice\":\"required\","
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},"
            + "{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}";
    ExtProcTestClient.Call declared = client.open(Map.of("x-sluice-fanout", "3"));
    ProcessingResponse withDeclared = send(declared, CHAT);
    ProcessingResponse withTools = send(open(null), tools);

    assertThat(plain.hasRequestBody()).as(plain.toString()).isTrue();
    assertThat(work(withDeclared) - work(plain)).isEqualTo(3 * 5000);
    // 2 tools, forced, parallel allowed; the tools' own input tokens come on top
    assertThat(work(withTools) - work(plain)).isGreaterThanOrEqualTo(2 * 10 + 100 + 1000);
    assertThat(work(withTools) - work(plain)).isLessThan(2 * 10 + 100 + 1000 + 100);
    assertThat(
            server
                .registry()
                .find("sluice.fanout.work_units")
                .tags("pool", "gpu", "source", "declared")
                .counter()
                .count())
        .isEqualTo(15000);
    assertThat(
            server
                .registry()
                .find("sluice.fanout.work_units")
                .tags("pool", "gpu", "source", "parallel_tool_calls")
                .counter()
                .count())
        .isEqualTo(1000);
  }

  @Test
  void thirdOfOneWorkflow_429FanoutBudget_otherWorkflowAdmitted_placesComeBack() throws Exception {
    ExtProcTestClient.Call a1 = open("run-a");
    ExtProcTestClient.Call a2 = open("run-a");
    assertThat(send(a1, CHAT).hasRequestBody()).isTrue();
    assertThat(send(a2, CHAT).hasRequestBody()).isTrue();
    assertThat(workflows().requests("gpu", "run-a")).isEqualTo(2);
    assertThat(
            server.registry().find("sluice.workflows.in_flight").tag("pool", "gpu").gauge().value())
        .isEqualTo(1.0);

    ExtProcTestClient.Call a3 = open("run-a");
    ProcessingResponse refused = send(a3, CHAT);
    assertThat(refused.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);
    assertThat(header(refused, "x-sluice-reason")).isEqualTo("fanout_budget");
    assertThat(Long.parseLong(header(refused, "retry-after"))).isGreaterThanOrEqualTo(1);
    assertThat(refused.getImmediateResponse().getBody().toStringUtf8())
        .contains("workflow has 2 requests")
        .contains("maxRequests 2")
        .doesNotContain("run-a");
    assertThat(refusals()).isEqualTo(1.0);
    assertThat(workflows().requests("gpu", "run-a")).isEqualTo(2);

    ExtProcTestClient.Call b1 = open("run-b");
    assertThat(send(b1, CHAT).hasRequestBody()).as("another workflow").isTrue();
    assertThat(
            server.registry().find("sluice.workflows.in_flight").tag("pool", "gpu").gauge().value())
        .isEqualTo(2.0);

    end(a1); // response end: the place comes back
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().requests("gpu", "run-a") == 1);
    ExtProcTestClient.Call a4 = open("run-a");
    assertThat(send(a4, CHAT).hasRequestBody()).isTrue();
    assertThat(workflows().requests("gpu", "run-a")).isEqualTo(2);

    a2.reset(); // an admitted request cancelled: its place comes back
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().requests("gpu", "run-a") == 1);
    a4.reset();
    b1.reset();
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().size() == 0);
    assertThat(
            server.registry().find("sluice.workflows.in_flight").tag("pool", "gpu").gauge().value())
        .isZero();
  }

  @Test
  void queuedRequestsHoldTheirPlace_andACancelWhileQueuedGivesItBack() throws Exception {
    ExtProcTestClient.Call b1 = open("run-b");
    ExtProcTestClient.Call b2 = open("run-b");
    ExtProcTestClient.Call c1 = open("run-c");
    ExtProcTestClient.Call c2 = open("run-c");
    for (ExtProcTestClient.Call c : new ExtProcTestClient.Call[] {b1, b2, c1, c2}) {
      assertThat(send(c, CHAT).hasRequestBody()).isTrue(); // the pool's 4 slots
    }

    ExtProcTestClient.Call a1 = open("run-a");
    ExtProcTestClient.Call a2 = open("run-a");
    assertThat(send(a1, CHAT).hasOverrideMessageTimeout()).as("queued").isTrue();
    assertThat(send(a2, CHAT).hasOverrideMessageTimeout()).as("queued").isTrue();
    assertThat(workflows().requests("gpu", "run-a")).isEqualTo(2);
    ProcessingResponse a3 = send(open("run-a"), CHAT);
    assertThat(header(a3, "x-sluice-reason"))
        .as("the waiting ones count: refused at once, not queued")
        .isEqualTo("fanout_budget");

    a1.reset(); // cancelled while queued
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().requests("gpu", "run-a") == 1);
    assertThat(server.runtime().controller().pool("gpu").queueDepth("interactive")).isEqualTo(1);

    end(b1); // a pool slot frees: a2 is admitted from the queue, keeping its place
    ProcessingResponse admitted = a2.responses.poll(5, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(admitted).isNotNull();
    assertThat(admitted.hasRequestBody()).isTrue();
    assertThat(workflows().requests("gpu", "run-a")).isEqualTo(1);
    end(a2);
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().requests("gpu", "run-a") == 0);
    for (ExtProcTestClient.Call c : new ExtProcTestClient.Call[] {b2, c1, c2}) {
      c.reset();
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> workflows().size() == 0);
  }
}
