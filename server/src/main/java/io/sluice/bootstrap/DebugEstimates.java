package io.sluice.bootstrap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.estimate.OutputReserves;
import java.util.Map;

/**
 * {@code GET /debug/estimates}: the learned output reserve per key, the most used first ({@code
 * ?limit=}, default 100, at most 10000): samples, quantile, the absolute and relative learned
 * values, which form predicts better, warmed or not (tenant ids appear here, on the admin port
 * only, never in metrics).
 */
final class DebugEstimates {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  static final int DEFAULT_LIMIT = 100;
  static final int MAX_LIMIT = 10_000;

  private DebugEstimates() {}

  static AdminHttpServer.Reply reply(OutputReserves reserves, Map<String, String> query) {
    int limit = DEFAULT_LIMIT;
    String l = query.get("limit");
    if (l != null) {
      try {
        limit = Integer.parseInt(l.trim());
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 0 || limit > MAX_LIMIT) {
        return AdminHttpServer.Reply.text(
            400, "limit: (expected: an integer in 0.." + MAX_LIMIT + ")\n");
      }
    }
    return AdminHttpServer.Reply.json(200, render(reserves, limit));
  }

  static String render(OutputReserves reserves, int limit) {
    OutputReserves.Settings s = reserves.settings();
    ObjectNode root = MAPPER.createObjectNode();
    root.put("enabled", s.enabled())
        .put("warmup", s.warmup())
        .put("halfLife", s.halfLife())
        .put("maxKeys", s.maxKeys())
        .put("tenantKeys", s.tenantKeys())
        .put("confidence", s.confidence())
        .put("poolPrior", s.poolPrior())
        .put("keys", reserves.keyCount())
        .put("evictions", reserves.evictions());
    ArrayNode keys = root.putArray("estimates");
    for (OutputReserves.KeyView k : reserves.top(limit)) {
      ObjectNode n = keys.addObject();
      n.put("pool", k.pool()).put("model", k.model()).put("scope", k.scope());
      if (!k.tenant().isEmpty()) {
        n.put("tenant", k.tenant());
      }
      n.put("quantile", k.quantile())
          .put("samples", k.samples())
          .put("uses", k.uses())
          .put("warmed", k.warmed())
          .put("form", k.form())
          .put("absoluteTokens", round(k.absolute()))
          .put("relativeToCap", Math.round(k.relative() * 10000) / 10000.0)
          .put("lossAbsolute", round(k.lossAbsolute()))
          .put("lossRelative", round(k.lossRelative()))
          .put("effectiveSamples", round(k.effectiveSamples()))
          .put("absoluteBound", round(k.absoluteBound()));
      if (k.tenantsWeighed() > 0) {
        n.put("tenantsWeighed", k.tenantsWeighed());
      }
    }
    try {
      return MAPPER.writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static double round(double v) {
    return Double.isNaN(v) ? 0 : Math.round(v * 10) / 10.0;
  }
}
