package io.sluice.core.mcp;

import com.fasterxml.jackson.core.JsonFactory;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.BodyRouter;
import io.sluice.core.session.Subject;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * MCP routes' requests by their JSON-RPC body: a {@code tools/call} is decided in the pool of the
 * first tool rule that matches (its class and deadline, if the rule gives them); {@code
 * initialize}, {@code tools/list}, notifications and responses in the route's own pool; a batch as
 * one request, with at most one {@code tools/call} (in that call's pool). Every refusal answers in
 * JSON-RPC ({@link JsonRpcErrors}). The tool's metric label (the rule's name, {@code other} for the
 * route's pool) travels in the request's signals as {@link #TOOL_SIGNAL}.
 */
public final class McpRouter implements BodyRouter {
  /** The signal key the tool's metric label travels under. */
  public static final String TOOL_SIGNAL = "mcp.tool";

  /** The label of a call no exact rule names, and of the messages that are no call. */
  public static final String OTHER = "other";

  /** The label of the messages that are no tool call. */
  public static final String NO_TOOL = "none";

  private final McpPolicy policy;
  private final JsonFactory json;
  private final Map<String, PoolPolicy> pools;
  private final Map<String, ClassPolicy> classes;
  private final Set<String> labels = new HashSet<>();

  /**
   * @param pools the snapshot's pools by name (every rule's pool is one: the section checks it)
   * @param classes the snapshot's classes by name
   */
  public McpRouter(
      McpPolicy policy, Map<String, PoolPolicy> pools, Map<String, ClassPolicy> classes) {
    this.policy = policy;
    this.json = JsonRpcScan.factory(policy);
    this.pools = Map.copyOf(pools);
    this.classes = Map.copyOf(classes);
    for (McpPolicy.Tool t : policy.tools()) {
      labels.add(t.name());
    }
  }

  /** The tool labels the metrics may carry: the rules' names, {@link #OTHER}, {@link #NO_TOOL}. */
  public Set<String> labels() {
    Set<String> all = new HashSet<>(labels);
    all.add(OTHER);
    all.add(NO_TOOL);
    return all;
  }

  @Override
  public boolean routes(String route) {
    return policy.enabled() && policy.routes().contains(route);
  }

  @Override
  public Route route(Subject atHeaders, byte[] body, int offset, int length) {
    JsonRpcScan.Body b = JsonRpcScan.read(json, body, offset, length, policy);
    List<String> ids = b.ids();
    JsonRpcScan.Problem problem = b.problem();
    if (problem != null) {
      return new Route.Answer(JsonRpcErrors.invalid(problem, ids, b.batch(), message(problem)));
    }
    JsonRpcScan.Message call = null;
    for (JsonRpcScan.Message m : b.messages()) {
      if (m.toolCall()) {
        call = m;
      }
    }
    String tool = call == null ? null : call.tool();
    if (tool == null) {
      return inPool(atHeaders, NO_TOOL, ids, b.batch());
    }
    McpPolicy.Tool rule = rule(tool, atHeaders.route());
    if (rule == null) {
      if (policy.unknownTools() == McpPolicy.UnknownTools.REFUSE) {
        return new Route.Answer(
            JsonRpcErrors.refusal(
                ids,
                b.batch(),
                OTHER,
                io.sluice.core.admission.Reason.UNKNOWN_ROUTE,
                0,
                "no tool rule names this tool"));
      }
      return inPool(atHeaders, OTHER, ids, b.batch());
    }
    PoolPolicy pool = pools.getOrDefault(rule.pool(), atHeaders.pool());
    ClassPolicy cls =
        rule.requestClass() == null
            ? atHeaders.requestClass()
            : classes.getOrDefault(rule.requestClass(), atHeaders.requestClass());
    long deadline = atHeaders.deadlineNanos();
    long own = rule.deadline().toNanos();
    if (own > 0 && atHeaders.arrivalNanos() + own < deadline) {
      deadline = atHeaders.arrivalNanos() + own;
    }
    Subject s =
        new Subject(
            atHeaders.route(),
            pool,
            cls,
            atHeaders.format(),
            atHeaders.tenant(),
            atHeaders.arrivalNanos(),
            deadline,
            atHeaders.operationId(),
            atHeaders.maxHoldNanos(),
            atHeaders.shadow(),
            atHeaders.fanout(),
            atHeaders.workflow(),
            atHeaders.signals().with(TOOL_SIGNAL, rule.name()));
    return new Route.InPool(s, refusals(ids, b.batch(), rule.name()));
  }

  private Route inPool(Subject atHeaders, String label, List<String> ids, boolean batch) {
    Subject s =
        new Subject(
            atHeaders.route(),
            atHeaders.pool(),
            atHeaders.requestClass(),
            atHeaders.format(),
            atHeaders.tenant(),
            atHeaders.arrivalNanos(),
            atHeaders.deadlineNanos(),
            atHeaders.operationId(),
            atHeaders.maxHoldNanos(),
            atHeaders.shadow(),
            atHeaders.fanout(),
            atHeaders.workflow(),
            atHeaders.signals().with(TOOL_SIGNAL, label));
    return new Route.InPool(s, refusals(ids, batch, label));
  }

  private static Refusals refusals(List<String> ids, boolean batch, String label) {
    return (reason, status, retryAfterSeconds, message) ->
        JsonRpcErrors.refusal(ids, batch, label, reason, retryAfterSeconds, message);
  }

  /** The first rule that matches a call of {@code tool} on {@code route}, or null. */
  McpPolicy.@Nullable Tool rule(String tool, String route) {
    for (McpPolicy.Tool t : policy.tools()) {
      if (t.matches(tool, route)) {
        return t;
      }
    }
    return null;
  }

  private String message(JsonRpcScan.Problem p) {
    return switch (p) {
      case MALFORMED -> "Parse error: not JSON, or nested deeper than " + policy.maxDepth();
      case INVALID -> "Invalid Request: not a JSON-RPC 2.0 request";
      case BATCH_TOO_LARGE -> "Invalid Request: a batch carries at most " + policy.maxBatch();
      case BATCH_TOOL_CALLS -> "Invalid Request: a batch carries at most one tools/call";
      case TOOL_NAME ->
          "Invalid params: tools/call needs params.name of at most "
              + policy.maxToolNameChars()
              + " characters";
    };
  }
}
