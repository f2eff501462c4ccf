package io.sluice.bootstrap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.queue.TenantFairQueue;

/**
 * {@code GET /debug/queues}: per pool and class, depth, queued work, oldest age and the top tenants
 * by queued work (tenant ids appear here, on the admin port only, never in metrics).
 */
final class DebugQueues {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final int TOP_TENANTS = 5;

  private DebugQueues() {}

  /** An adaptive pool's limit: its bounds, where it is now, why it last moved, the signals. */
  private static void adaptive(PoolState pool, ObjectNode p, long nowNanos) {
    io.sluice.core.policy.PoolPolicy c = pool.configuredPolicy();
    if (!c.adaptive().enabled()) {
      return;
    }
    ObjectNode a = p.putObject("adaptive");
    a.put("minCapacity", c.adaptive().minCapacity()).put("maxCapacity", c.capacityWorkUnits());
    if (c.maxRequests() > 0) {
      a.put("minRequests", Math.max(1, c.adaptive().minRequests()))
          .put("maxRequests", c.maxRequests());
    }
    io.sluice.core.adapt.AdaptiveLimit limit = pool.adaptive();
    if (limit == null) {
      a.put("state", "starting");
      return;
    }
    io.sluice.core.adapt.AdaptiveLimit.Snapshot s = limit.snapshot(nowNanos);
    a.put("capacity", s.work());
    if (c.maxRequests() > 0) {
      a.put("requests", s.requests());
    }
    a.put("fraction", Math.round(s.fraction() * 1000) / 1000.0)
        .put("cause", s.cause().label())
        .put("sinceChangeMs", (nowNanos - s.changedAtNanos()) / 1_000_000L)
        .put("slowStart", s.slowStart())
        .put("pausedMs", s.pauseRemainingNanos() / 1_000_000L);
    if (!Double.isNaN(s.lastRatio())) {
      a.put("latencyRatio", Math.round(s.lastRatio() * 1000) / 1000.0);
    }
    if (!Double.isNaN(s.ttftBaselineNanos())) {
      a.put("ttftBaselineMs", Math.round(s.ttftBaselineNanos() / 1e4) / 100.0);
    }
    if (!Double.isNaN(s.tpotBaselineNanos())) {
      a.put("tpotBaselineMs", Math.round(s.tpotBaselineNanos() / 1e4) / 100.0);
    }
  }

  static String render(AdmissionController controller, long nowNanos) {
    return render(controller, nowNanos, (pool, node) -> {});
  }

  /** With {@code extra} adding to each pool's entry (its replica share). */
  static String render(
      AdmissionController controller,
      long nowNanos,
      java.util.function.BiConsumer<String, ObjectNode> extra) {
    ObjectNode root = MAPPER.createObjectNode();
    ArrayNode pools = root.putArray("pools");
    for (PoolState pool : controller.pools()) {
      PoolState.Snapshot s = pool.snapshot(nowNanos);
      ObjectNode p = pools.addObject();
      p.put("pool", s.pool());
      p.put("capacity", s.capacityWorkUnits());
      p.put("workInFlight", s.workInFlight());
      p.put("requestsInFlight", s.requestsInFlight());
      p.put("completedWorkPerSecond", Math.round(s.completedWorkPerSecond() * 10) / 10.0);
      adaptive(pool, p, nowNanos);
      extra.accept(s.pool(), p);
      ArrayNode classes = p.putArray("classes");
      for (PoolState.QueueSnapshot q : pool.queues(nowNanos, TOP_TENANTS)) {
        ObjectNode c = classes.addObject();
        c.put("class", q.className());
        c.put("depth", q.depth());
        c.put("queuedWork", q.queuedWork());
        c.put("oldestAgeMs", q.oldestAgeNanos() / 1_000_000L);
        ArrayNode top = c.putArray("topTenants");
        for (TenantFairQueue.TenantLoad t : q.topTenants()) {
          top.addObject()
              .put("tenant", t.tenant())
              .put("queuedWork", t.queuedWork())
              .put("items", t.items());
        }
      }
    }
    try {
      return MAPPER.writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
