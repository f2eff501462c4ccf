package io.sluice.core.mcp;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code mcp} section (docs/mcp.md): which routes carry MCP, how a tool maps to its pool, and
 * the bounds of what is read of a body.
 *
 * @param enabled whether MCP routes are read at all
 * @param routes the routes (their names in {@code routes}) whose bodies are JSON-RPC
 * @param tools the tool rules, first match wins
 * @param unknownTools what happens to a {@code tools/call} no rule matches
 * @param maxBatch messages a batch may carry (a larger one is refused, {@code batch_too_large})
 * @param maxToolNameChars the longest tool name read ({@code tool_name_too_long} beyond)
 * @param maxDepth the deepest JSON nesting read ({@code malformed} beyond)
 */
public record McpPolicy(
    boolean enabled,
    Set<String> routes,
    List<Tool> tools,
    UnknownTools unknownTools,
    int maxBatch,
    int maxToolNameChars,
    int maxDepth) {

  public static final McpPolicy DEFAULTS =
      new McpPolicy(false, Set.of(), List.of(), UnknownTools.ROUTE, 32, 128, 32);

  public McpPolicy {
    routes = Set.copyOf(routes);
    tools = List.copyOf(tools);
    Objects.requireNonNull(unknownTools, "unknownTools");
  }

  /** What happens to a {@code tools/call} of a tool no rule names. */
  public enum UnknownTools {
    /** Decided in the route's own pool. */
    ROUTE("route"),
    /** Refused as a JSON-RPC error ({@code unknown_tool}). */
    REFUSE("refuse");

    private final String configName;

    UnknownTools(String configName) {
      this.configName = configName;
    }

    public String configName() {
      return configName;
    }
  }

  /**
   * One tool rule: a {@code tools/call} matches when its name equals {@code name} (or matches it as
   * a glob, {@code *} any run of characters, {@code ?} one) and, if {@code server} is given, it
   * came on that route (an MCP server behind its own route).
   *
   * @param name the tool's name or a glob; {@code *} alone: any tool (of {@code server})
   * @param server the route of the MCP server, or null: any MCP route
   * @param pool the pool the call is decided in (its cap, queue, replica share, tenant caps)
   * @param requestClass the class it is decided as (its queue bounds, queue timeout), or null: the
   *     route's
   * @param deadline the longest the call may take from its arrival (tightens its class's; zero: the
   *     class's)
   */
  public record Tool(
      String name,
      @Nullable String server,
      String pool,
      @Nullable String requestClass,
      Duration deadline) {
    public Tool {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(pool, "pool");
      Objects.requireNonNull(deadline, "deadline");
    }

    /** Whether the name holds a glob's wildcard. */
    public boolean glob() {
      return name.indexOf('*') >= 0 || name.indexOf('?') >= 0;
    }

    /** Whether a call of tool {@code tool} on route {@code route} matches. */
    boolean matches(String tool, String route) {
      if (server != null && !server.equals(route)) {
        return false;
      }
      return glob() ? Glob.matches(name, tool) : name.equals(tool);
    }
  }
}
