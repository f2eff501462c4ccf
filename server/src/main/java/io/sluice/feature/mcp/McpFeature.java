package io.sluice.feature.mcp;

import io.sluice.config.McpSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.mcp.McpPolicy;
import io.sluice.core.mcp.McpRouter;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.observability.McpMetrics;
import io.sluice.observability.McpRecorder;

/**
 * MCP-aware admission (docs/mcp.md), registered in one place: its section ({@link McpSection},
 * {@code mcp}), its body router ({@link McpRouter}: a {@code tools/call} decided in its tool's
 * pool, refusals as JSON-RPC errors) and its listener ({@link McpRecorder} on the process's {@link
 * McpMetrics}), all only while {@code mcp.enabled}. It keeps no state of its own: the tools' caps,
 * queues and shares across replicas are their pools'.
 */
public final class McpFeature implements Feature {
  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    SluiceConfig config = s.config();
    McpPolicy policy = config.section(McpSection.SECTION);
    if (!policy.enabled()) {
      return;
    }
    McpRouter router = new McpRouter(policy, config.pools(), config.classes());
    McpMetrics meters = s.metrics().part(McpMetrics.class, McpMetrics::new);
    for (McpPolicy.Tool t : policy.tools()) {
      PoolPolicy pool = config.pools().get(t.pool());
      if (pool != null) {
        meters.limit(t.name(), pool.maxRequests());
        meters.queueLimit(t.name(), pool.queueDepth());
      }
    }
    out.bodyRouter(router).listener(new McpRecorder(meters, policy.routes(), router.labels()));
  }
}
