package io.sluice.core.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.BodyRouter;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.Subject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which pool a JSON-RPC body is decided in, and how its refusals read. */
class McpRouterTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  static final PoolPolicy SLOW = pool("tool-slow", 5);
  static final PoolPolicy FAST = pool("tool-fast", 50);
  static final ClassPolicy TOOLS =
      ClassPolicy.builder("tools").deadline(Duration.ofSeconds(60)).build();

  static PoolPolicy pool(String name, int cap) {
    return PoolPolicy.builder(name, 1_000_000).maxRequests(cap).build();
  }

  static McpPolicy policy(McpPolicy.UnknownTools unknown) {
    return new McpPolicy(
        true,
        Set.of("mcp"),
        List.of(
            new McpPolicy.Tool("pdf_render", null, "tool-slow", "tools", Duration.ofSeconds(5)),
            new McpPolicy.Tool("search_*", null, "tool-fast", null, Duration.ZERO),
            new McpPolicy.Tool("*", "payments-mcp", "tool-slow", null, Duration.ZERO)),
        unknown,
        4,
        16,
        8);
  }

  final McpRouter router =
      new McpRouter(
          policy(McpPolicy.UnknownTools.ROUTE),
          Map.of("tool-slow", SLOW, "tool-fast", FAST, "gpu", OneSlotPool.POOL),
          Map.of("tools", TOOLS, "interactive", OneSlotPool.INTERACTIVE));

  static Subject headers(String route) {
    Subject s = OneSlotPool.chat(new Tenant("acme", TierPolicy.defaults("pro")), 0, null, 0);
    return new Subject(
        route,
        s.pool(),
        s.requestClass(),
        s.format(),
        s.tenant(),
        0,
        s.deadlineNanos(),
        null,
        0,
        false,
        0,
        null,
        s.signals());
  }

  BodyRouter.Route route(String route, String body) {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    return router.route(headers(route), b, 0, b.length);
  }

  static String call(Object id, String tool) {
    return "{\"jsonrpc\":\"2.0\",\"id\":"
        + id
        + ",\"method\":\"tools/call\",\"params\":{\"arguments\":{\"q\":[1,{\"a\":2}]},\"name\":\""
        + tool
        + "\"}}";
  }

  static JsonNode body(AdmissionCheck.Answered a) throws Exception {
    return JSON.readTree(a.body());
  }

  @Test
  void routes_onlyTheConfiguredRoutes() {
    assertThat(router.routes("mcp")).isTrue();
    assertThat(router.routes("chat")).isFalse();
  }

  @Test
  void toolCall_exactName_decidedInItsPool_classAndTighterDeadline() {
    var r = (BodyRouter.Route.InPool) route("mcp", call(7, "pdf_render"));
    assertThat(r.subject().pool().name()).isEqualTo("tool-slow");
    assertThat(r.subject().requestClass().name()).isEqualTo("tools");
    assertThat(r.subject().deadlineNanos()).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(r.subject().signals().get(McpRouter.TOOL_SIGNAL)).isEqualTo("pdf_render");
  }

  @Test
  void toolCall_glob_andServer() {
    var g = (BodyRouter.Route.InPool) route("mcp", call("\"a\"", "search_docs"));
    assertThat(g.subject().pool().name()).isEqualTo("tool-fast");
    assertThat(g.subject().signals().get(McpRouter.TOOL_SIGNAL)).isEqualTo("search_*");
    var s = (BodyRouter.Route.InPool) route("payments-mcp", call(1, "refund"));
    assertThat(s.subject().pool().name()).isEqualTo("tool-slow");
  }

  @Test
  void otherMessages_andUnknownTools_decidedInTheRoutesPool() {
    for (String body :
        List.of(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such/method\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}")) {
      var r = (BodyRouter.Route.InPool) route("mcp", body);
      assertThat(r.subject().pool().name()).as(body).isEqualTo("gpu");
      assertThat(r.subject().signals().get(McpRouter.TOOL_SIGNAL)).isEqualTo(McpRouter.NO_TOOL);
    }
    var u = (BodyRouter.Route.InPool) route("mcp", call(5, "unknown_tool"));
    assertThat(u.subject().pool().name()).isEqualTo("gpu");
    assertThat(u.subject().signals().get(McpRouter.TOOL_SIGNAL)).isEqualTo(McpRouter.OTHER);
  }

  @Test
  void unknownTools_refuse_answersAJsonRpcError() throws Exception {
    McpRouter strict =
        new McpRouter(
            policy(McpPolicy.UnknownTools.REFUSE),
            Map.of("tool-slow", SLOW, "tool-fast", FAST),
            Map.of());
    byte[] b = call(5, "unknown_tool").getBytes(StandardCharsets.UTF_8);
    var a = (BodyRouter.Route.Answer) strict.route(headers("mcp"), b, 0, b.length);
    JsonNode n = body(a.answer());
    assertThat(n.get("id").asInt()).isEqualTo(5);
    assertThat(n.at("/error/code").asInt()).isEqualTo(JsonRpcErrors.TOOL_REFUSED);
    assertThat(n.at("/error/data/retryable").asBoolean()).isFalse();
  }

  @Test
  void refusal_isRetryableToolBackpressure_withTheCallsId() throws Exception {
    var r = (BodyRouter.Route.InPool) route("mcp", call("\"req-9\"", "pdf_render"));
    AdmissionCheck.Answered a =
        r.refusals().refusal(Reason.QUEUE_FULL, 503, 3, "the tool's queue is full");
    assertThat(a.status()).isEqualTo(200);
    assertThat(a.headers()).containsEntry("retry-after", "3");
    JsonNode n = body(a);
    assertThat(n.get("jsonrpc").asText()).isEqualTo("2.0");
    assertThat(n.get("id").asText()).isEqualTo("req-9");
    assertThat(n.at("/error/code").asInt()).isEqualTo(-32000);
    assertThat(n.at("/error/data/type").asText()).isEqualTo("TOOL_BACKPRESSURE");
    assertThat(n.at("/error/data/reason").asText()).isEqualTo("queue_full");
    assertThat(n.at("/error/data/tool").asText()).isEqualTo("pdf_render");
    assertThat(n.at("/error/data/retryable").asBoolean()).isTrue();
    assertThat(n.at("/error/data/retry_after_ms").asLong()).isEqualTo(3000);
    assertThat(n.at("/error/data/suggestion").asText()).isEqualTo(JsonRpcErrors.SUGGESTION);
  }

  @Test
  void batch_oneCall_decidedInItsPool_refusedAsAnArrayOfErrorsForEachRequest() throws Exception {
    String batch =
        "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"},"
            + call(1, "pdf_render")
            + ",{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}]";
    var r = (BodyRouter.Route.InPool) route("mcp", batch);
    assertThat(r.subject().pool().name()).isEqualTo("tool-slow");
    JsonNode n = body(r.refusals().refusal(Reason.POOL_SATURATED, 503, 1, "full"));
    assertThat(n.isArray()).isTrue();
    assertThat(n).hasSize(2);
    assertThat(n.get(0).get("id").asInt()).isEqualTo(1);
    assertThat(n.get(1).get("id").asInt()).isEqualTo(2);
  }

  @Test
  void batch_twoCalls_refusedForEachCall() throws Exception {
    var a = (BodyRouter.Route.Answer) route("mcp", "[" + call(1, "a") + "," + call(2, "b") + "]");
    assertThat(a.answer().reason()).isEqualTo(Reason.MCP_INVALID);
    JsonNode n = body(a.answer());
    assertThat(n).hasSize(2);
    assertThat(n.get(0).at("/error/data/reason").asText()).isEqualTo("batch_tool_calls");
  }

  @Test
  void badInput_typedAnswers() throws Exception {
    Map<String, String> cases =
        Map.of(
            "{not json",
            "malformed",
            "[]",
            "invalid_request",
            "42",
            "invalid_request",
            "[1,2]",
            "invalid_request",
            "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"x\"}",
            "invalid_request",
            "{\"id\":1,\"method\":\"tools/call\",\"params\":{}}",
            "invalid_tool_name",
            call(1, "x".repeat(17)),
            "invalid_tool_name",
            "[" + "{\"jsonrpc\":\"2.0\",\"method\":\"n\"},".repeat(4) + call(1, "a") + "]",
            "batch_too_large",
            "[".repeat(50) + "]".repeat(50),
            "malformed",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"} trailing",
            "malformed");
    for (var c : cases.entrySet()) {
      BodyRouter.Route r = route("mcp", c.getKey());
      assertThat(r).as(c.getKey()).isInstanceOf(BodyRouter.Route.Answer.class);
      AdmissionCheck.Answered a = ((BodyRouter.Route.Answer) r).answer();
      JsonNode n = body(a);
      JsonNode e = n.isArray() ? n.get(0) : n;
      assertThat(e.at("/error/data/reason").asText()).as(c.getKey()).isEqualTo(c.getValue());
      assertThat(e.at("/error/data/retryable").asBoolean()).isFalse();
      assertThat(a.reason()).isEqualTo(Reason.MCP_INVALID);
    }
  }

  @Test
  void hugeBatch_readsOnlyUpToTheBound() throws Exception {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < 10_000; i++) {
      b.append(i == 0 ? "" : ",").append(call(i, "search_x"));
    }
    String body = b.append(']').toString();
    var a = (BodyRouter.Route.Answer) route("mcp", body);
    JsonNode n = body(a.answer());
    assertThat(a.answer().status()).isEqualTo(400);
    assertThat(n.get("id").isNull()).isTrue();
    assertThat(n.at("/error/data/reason").asText()).isEqualTo("batch_too_large");
    assertThat(a.answer().body().length).isLessThan(1_000);
  }

  @Test
  void glob_matches() {
    assertThat(Glob.matches("search_*", "search_docs")).isTrue();
    assertThat(Glob.matches("search_*", "research")).isFalse();
    assertThat(Glob.matches("a?c*", "abcdef")).isTrue();
    assertThat(Glob.matches("*x*y", "axbxcy")).isTrue();
    assertThat(Glob.matches("*", "")).isTrue();
    assertThat(Glob.matches("a", "ab")).isFalse();
  }

  private static JsonRpcScan.Body scan(McpPolicy p, int arrays) {
    byte[] b =
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                + "{\"name\":\"pdf_render\",\"arguments\":"
                + "[".repeat(arrays)
                + "]".repeat(arrays)
                + "}}")
            .getBytes(StandardCharsets.UTF_8);
    return JsonRpcScan.read(JsonRpcScan.factory(p), b, 0, b.length, p);
  }

  /**
   * A JSON-RPC body is read to {@code mcp.maxDepth} levels of nesting (8 here: the message, its
   * params, then the arguments' containers) and no deeper: past it the body is malformed, not read.
   */
  @Test
  void aBodyNestedPastMaxDepth_isMalformed_notRead() {
    McpPolicy p = policy(McpPolicy.UnknownTools.ROUTE);
    assertThat(p.maxDepth()).isEqualTo(8);

    JsonRpcScan.Body within = scan(p, 6); // 2 + 6 = 8 levels
    assertThat(within.problem()).isNull();
    assertThat(within.messages())
        .extracting(JsonRpcScan.Message::tool)
        .containsExactly("pdf_render");

    JsonRpcScan.Body past = scan(p, 7);
    assertThat(past.problem()).isEqualTo(JsonRpcScan.Problem.MALFORMED);
  }
}
