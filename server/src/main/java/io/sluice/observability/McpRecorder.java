package io.sluice.observability;

import io.sluice.core.admission.Reason;
import io.sluice.core.mcp.McpRouter;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;
import java.util.Set;

/**
 * MCP admission's listener, registered by its feature: counts each call of an MCP route by its
 * tool's label (the request's {@link McpRouter#TOOL_SIGNAL}; a label the snapshot does not know
 * counts as {@code other}) on the process's {@link McpMetrics}.
 */
public final class McpRecorder implements SessionListener {
  private final McpMetrics meters;
  private final Set<String> routes;
  private final Set<String> labels;

  /**
   * @param routes the MCP routes
   * @param labels the labels the router gives ({@link McpRouter#labels})
   */
  public McpRecorder(McpMetrics meters, Set<String> routes, Set<String> labels) {
    this.meters = meters;
    this.routes = Set.copyOf(routes);
    this.labels = Set.copyOf(labels);
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Admitted.class
        || type == SessionEvent.Released.class
        || type == SessionEvent.Dequeued.class
        || type == SessionEvent.Refused.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Admitted e) {
      String tool = tool(e.facts().subject());
      if (tool != null) {
        meters.call(tool, "admitted");
        meters.inFlight(tool, 1);
      }
    } else if (event instanceof SessionEvent.Released e) {
      String tool = tool(e.facts().subject());
      if (tool != null) {
        meters.inFlight(tool, -1);
        meters.served(tool, e.heldNanos());
      }
    } else if (event instanceof SessionEvent.Dequeued e) {
      String tool = tool(e.subject());
      if (tool != null) {
        meters.waited(tool, e.waitedNanos());
      }
    } else if (event instanceof SessionEvent.Refused e) {
      String tool = tool(e.facts().subject());
      if (tool != null) {
        meters.call(tool, outcome(e.reason(), e.retryAfterSeconds()));
      }
    }
  }

  /** Shed: a capacity refusal a retry may cure later; invalid: a body Sluice cannot admit. */
  static String outcome(Reason r, long retryAfterSeconds) {
    if (r == Reason.MCP_INVALID) {
      return "invalid";
    }
    return r.retryable() && retryAfterSeconds > 0 ? "shed" : "refused";
  }

  /** The request's tool label, or null when it is no MCP route's. */
  private @org.jspecify.annotations.Nullable String tool(Subject s) {
    if (!routes.contains(s.route())) {
      return null;
    }
    String t = s.signals().get(McpRouter.TOOL_SIGNAL);
    return t == null ? McpRouter.NO_TOOL : labels.contains(t) ? t : McpRouter.OTHER;
  }
}
