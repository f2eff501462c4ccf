package io.sluice.core.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.McpSection;
import io.sluice.config.SluiceConfig;
import io.sluice.config.ToolQueues;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.BodyRouter;
import io.sluice.core.session.Subject;
import io.sluice.core.time.FakeTicker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A tool pool's own queue, on a fake clock: its depth defaults to its cap ({@code maxRequests}),
 * bounds what waits for the pool whatever the class's {@code maxQueueItems}, and a call beyond it
 * is refused {@code queue_full} as a retryable JSON-RPC {@code TOOL_BACKPRESSURE} with its
 * retry-after; {@code pools.<name>.queueDepth} sets it.
 */
class ToolQueueDepthTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final FakeTicker time = new FakeTicker();

  static String config(String toolPool) {
    return """
        pools:
          mcp-control: {capacity: 1000000, maxRequests: 100}
          tool-pdf: {capacity: 1000000, maxRequests: 2, defaultServiceTime: 100ms,
                     retryAfter: {min: 1s, max: 10s, jitter: 0.0}%s}
        classes:
          tools: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 30s, maxQueueWait: 10s,
                  defaultOutputTokens: 16, maxOutputTokens: 64}
        routes:
          - {name: mcp, match: {pathPrefix: /mcp}, pool: mcp-control, class: tools}
        mcp: {enabled: true, routes: [mcp], tools: [{name: pdf_render, pool: tool-pdf, class: tools}]}
        """
        .formatted(toolPool);
  }

  /** Offers calls of pdf_render until one is refused; the decisions in order. */
  private List<Decision> fill(SluiceConfig c, int calls) {
    McpRouter router = new McpRouter(c.section(McpSection.SECTION), c.pools(), c.classes());
    AdmissionController controller = Controllers.forPolicy(c, () -> 0.5);
    List<Decision> out = new ArrayList<>();
    long deadline = time.nanos() + Duration.ofSeconds(30).toNanos();
    for (int i = 0; i < calls; i++) {
      Subject s = route(router, i).subject();
      Tenant t = new Tenant("acme", TierPolicy.defaults("pro"));
      out.add(
          controller.decide(
              new AdmissionRequest(
                  s.pool(), s.requestClass(), t, 1, time.nanos(), deadline, -1, -1),
              Ask.hold(Duration.ofSeconds(5).toNanos(), NOBODY, time.nanos())));
    }
    return out;
  }

  private static BodyRouter.Route.InPool route(McpRouter router, int id) {
    byte[] b = McpRouterTest.call(id, "pdf_render").getBytes(StandardCharsets.UTF_8);
    var r = (BodyRouter.Route.InPool) router.route(McpRouterTest.headers("mcp"), b, 0, b.length);
    assertThat(r.subject().pool().name()).isEqualTo("tool-pdf");
    return r;
  }

  private static final Waiter NOBODY =
      new Waiter() {
        @Override
        public void admitted(Permit permit, long waitedNanos) {}

        @Override
        public void refused(Decision.Reject rejection, long waitedNanos) {}
      };

  private static void assertRunsWaitsThenRefuses(List<Decision> d, int waiting) {
    assertThat(d.subList(0, 2)).allMatch(x -> x instanceof Decision.Admit);
    assertThat(d.subList(2, 2 + waiting)).allMatch(x -> x instanceof Decision.Queued);
    assertThat(d.get(2 + waiting)).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d.get(2 + waiting)).reason()).isEqualTo(Reason.QUEUE_FULL);
  }

  @Test
  void capTwo_depthDefaultsToTheCap_twoRunTwoWait_theFifthIsRefusedQueueFull() throws Exception {
    SluiceConfig c = ConfigLoader.parse(config(", maxMessageTimeout: 5s"));
    assertThat(c.pools().get("tool-pdf").queueDepth()).isEqualTo(2);
    assertThat(c.pools().get("mcp-control").queueDepth()).isZero(); // no tool pool: no bound
    List<Decision> d = fill(c, 5);
    assertRunsWaitsThenRefuses(d, 2);

    Decision.Reject r = (Decision.Reject) d.get(4);
    assertThat(r.message()).contains("pool tool-pdf (depth 2)");
    McpRouter router = new McpRouter(c.section(McpSection.SECTION), c.pools(), c.classes());
    AdmissionCheck.Answered a =
        route(router, 5)
            .refusals()
            .refusal(r.reason(), r.status(), r.retryAfterSeconds(), r.message());
    JsonNode n = JSON.readTree(a.body());
    assertThat(n.at("/error/data/type").asText()).isEqualTo("TOOL_BACKPRESSURE");
    assertThat(n.at("/error/data/reason").asText()).isEqualTo("queue_full");
    assertThat(n.at("/error/data/retryable").asBoolean()).isTrue();
    assertThat(n.at("/error/data/retry_after_ms").asLong()).isPositive();
  }

  @Test
  void depthSetToFour_fourWait_theSeventhIsRefused() {
    SluiceConfig c = ConfigLoader.parse(config(", maxMessageTimeout: 5s, queueDepth: 4"));
    assertThat(c.pools().get("tool-pdf").queueDepth()).isEqualTo(4);
    assertRunsWaitsThenRefuses(fill(c, 7), 4);
  }

  @Test
  void depthOutOfRange_isAConfigErrorNamingTheField() {
    assertThatThrownBy(() -> ConfigLoader.parse(config(", queueDepth: 0")))
        .hasMessageContaining("pools.tool-pdf.queueDepth");
  }

  @Test
  void aToolPoolWithNoHold_isWarnedAbout_oneWithAHoldIsNot() {
    assertThat(ToolQueues.warnings(ConfigLoader.parse(config(""))))
        .singleElement()
        .asString()
        .contains("pools.tool-pdf", "maxMessageTimeout", "queueDepth 2");
    assertThat(ToolQueues.warnings(ConfigLoader.parse(config(", maxMessageTimeout: 5s"))))
        .isEmpty();
  }
}
