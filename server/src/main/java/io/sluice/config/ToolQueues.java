package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.core.mcp.McpPolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The queues of MCP tool pools (docs/mcp.md, "A tool's queue"): a pool an MCP tool rule names waits
 * at most {@code queueDepth} calls, by default its cap ({@code maxRequests}); and the warning when
 * such a pool has no hold, so behind Envoy its queue can hold nothing.
 */
public final class ToolQueues {
  private ToolQueues() {}

  /**
   * The pools with each tool pool's unset {@code queueDepth} set to its {@code maxRequests} (while
   * {@code mcp} is enabled); other pools, and pools with no cap, unchanged.
   */
  public static Map<String, PoolPolicy> withDepths(Map<String, PoolPolicy> pools, McpPolicy mcp) {
    Set<String> tools = toolPools(mcp);
    if (tools.isEmpty()) {
      return pools;
    }
    Map<String, PoolPolicy> out = new LinkedHashMap<>(pools);
    for (String name : tools) {
      PoolPolicy p = pools.get(name);
      if (p != null && p.queueDepth() == 0 && p.maxRequests() > 0) {
        out.put(name, p.toBuilder().queueDepth(p.maxRequests()).build());
      }
    }
    return out;
  }

  /**
   * One warning per tool pool with no hold: no {@code maxMessageTimeout} and no per-route {@code
   * maxMessageTimeoutMs} signal, so a call over the cap is refused at once ({@code pool_saturated})
   * and the queue's depth is never used.
   */
  public static List<String> warnings(SluiceConfig config) {
    if (!config.signals().getOrDefault(Signal.MAX_MESSAGE_TIMEOUT_MS, List.of()).isEmpty()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String name : toolPools(config.section(McpSection.SECTION))) {
      PoolPolicy p = config.pools().get(name);
      if (p != null && p.maxMessageTimeout().isZero()) {
        out.add(
            "pools."
                + name
                + ": an MCP tool pool with no maxMessageTimeout cannot hold a call, so its queue"
                + " (queueDepth "
                + p.queueDepth()
                + ") stays empty and every call over its cap is refused at once (pool_saturated);"
                + " set maxMessageTimeout to Envoy's max_message_timeout (see docs/mcp.md)");
      }
    }
    return out;
  }

  private static Set<String> toolPools(McpPolicy mcp) {
    Set<String> names = new LinkedHashSet<>();
    if (mcp.enabled()) {
      for (McpPolicy.Tool t : mcp.tools()) {
        names.add(t.pool());
      }
    }
    return names;
  }
}
