package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.mcp.McpPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The {@code mcp} section (docs/mcp.md, docs/configuration.md "MCP"): the routes whose bodies are
 * MCP JSON-RPC, and each tool's pool. Every error names its YAML path and the value expected.
 */
public final class McpSection implements ConfigSection<McpPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(McpSection.SECTION)}. */
  public static final McpSection SECTION = new McpSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public McpSection() {}

  @Override
  public String name() {
    return "mcp";
  }

  @Override
  public McpPolicy defaults() {
    return McpPolicy.DEFAULTS;
  }

  @Override
  public McpPolicy read(Node n, Refs refs) {
    McpPolicy d = McpPolicy.DEFAULTS;
    n.only(
        Set.of(
            "enabled",
            "routes",
            "tools",
            "unknownTools",
            "maxBatch",
            "maxToolNameChars",
            "maxDepth"));
    boolean enabled = n.get("enabled").bool(d.enabled());
    Set<String> routes = new LinkedHashSet<>();
    for (Node r : n.get("routes").items()) {
      String name = r.requiredString();
      if (!refs.routes().contains(name)) {
        r.invalid(name, "the name of a route in routes");
      } else {
        routes.add(name);
      }
    }
    if (enabled && routes.isEmpty()) {
      n.get("routes").error(n.get("routes").path() + ": empty (expected: at least one route name)");
    }
    List<McpPolicy.Tool> tools = new ArrayList<>();
    for (Node t : n.get("tools").items()) {
      t.only(Set.of("name", "server", "pool", "class", "deadline"));
      String name = t.get("name").requiredString();
      if (name.isEmpty() || name.length() > 256) {
        t.get("name").invalid(name, "a tool name or glob of 1..256 characters");
      }
      String server = t.get("server").optionalString(null);
      if (server != null && !refs.routes().contains(server)) {
        t.get("server").invalid(server, "the name of a route in routes (the MCP server's)");
      }
      String pool = t.get("pool").requiredString();
      if (!pool.isEmpty() && !refs.pools().contains(pool)) {
        t.get("pool").invalid(pool, "the name of a pool in pools");
      }
      String cls = t.get("class").optionalString(null);
      if (cls != null && !refs.classes().contains(cls)) {
        t.get("class").invalid(cls, "the name of a class in classes");
      }
      Duration deadline = t.get("deadline").duration(Duration.ZERO);
      if (deadline.isNegative() || deadline.compareTo(Duration.ofHours(24)) > 0) {
        t.get("deadline").invalid(ConfigWriter.duration(deadline), "0 (the class's) up to 24h");
        deadline = Duration.ZERO;
      }
      tools.add(new McpPolicy.Tool(name, server, pool, cls, deadline));
    }
    McpPolicy.UnknownTools unknown =
        n.get("unknownTools")
            .enumValue(
                McpPolicy.UnknownTools.class, d.unknownTools(), McpPolicy.UnknownTools::configName);
    return new McpPolicy(
        enabled,
        routes,
        tools,
        unknown,
        n.get("maxBatch").intValue(d.maxBatch(), 1, 1_000),
        n.get("maxToolNameChars").intValue(d.maxToolNameChars(), 1, 1_024),
        n.get("maxDepth").intValue(d.maxDepth(), 4, 256));
  }

  @Override
  public ObjectNode write(McpPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("enabled", p.enabled());
    ArrayNode routes = n.putArray("routes");
    p.routes().stream().sorted().forEach(routes::add);
    n.put("unknownTools", p.unknownTools().configName())
        .put("maxBatch", p.maxBatch())
        .put("maxToolNameChars", p.maxToolNameChars())
        .put("maxDepth", p.maxDepth());
    ArrayNode tools = n.putArray("tools");
    for (McpPolicy.Tool t : p.tools()) {
      ObjectNode o = tools.addObject().put("name", t.name());
      if (t.server() != null) {
        o.put("server", t.server());
      }
      o.put("pool", t.pool());
      if (t.requestClass() != null) {
        o.put("class", t.requestClass());
      }
      o.put("deadline", ConfigWriter.duration(t.deadline()));
    }
    return n;
  }
}
