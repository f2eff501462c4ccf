package io.sluice.core.admission;

/**
 * Stable reason codes (PRODUCT.md). Clients branch on {@link #code()}: never rename one; add new
 * ones at the end.
 */
public enum Reason {
  ADMITTED("admitted", 200, Scope.NONE, true),
  POOL_SATURATED("pool_saturated", 503, Scope.POOL, true),
  QUEUE_FULL("queue_full", 503, Scope.POOL, true),
  QUEUE_TIMEOUT("queue_timeout", 503, Scope.POOL, true),
  DEADLINE_UNREACHABLE("deadline_unreachable", 503, Scope.POOL, true),
  TENANT_RATE("tenant_rate", 429, Scope.TENANT, true),
  TENANT_TOKENS("tenant_tokens", 429, Scope.TENANT, true),
  TENANT_CONCURRENCY("tenant_concurrency", 429, Scope.TENANT, true),
  CLASS_SHARE("class_share", 503, Scope.CLASS, true),
  RETRY_BUDGET("retry_budget", 429, Scope.TENANT, true),
  DUPLICATE_OPERATION("duplicate_operation", 409, Scope.REQUEST, true),
  UPSTREAM_OVERLOADED("upstream_overloaded", 503, Scope.POOL, true),
  INVALID_REQUEST("invalid_request", 400, Scope.REQUEST, true),
  BODY_TOO_LARGE("body_too_large", 413, Scope.REQUEST, true),
  UNKNOWN_ROUTE("unknown_route", 404, Scope.REQUEST, true),
  DEGRADED("degraded", 200, Scope.REQUEST, true),
  UNKNOWN_TENANT("unknown_tenant", 403, Scope.TENANT, true),
  SHUTTING_DOWN("shutting_down", 503, Scope.POOL, true),
  /** A workflow (agent run) holds its pool's {@code workflow.maxRequests} or {@code maxWork}. */
  FANOUT_BUDGET("fanout_budget", 429, Scope.TENANT, true),
  /** A retry came back before the Retry-After it was given ({@code retries.earlyRetry: refuse}). */
  EARLY_RETRY("early_retry", 429, Scope.TENANT, true),
  /**
   * Not refused: a background request accepted into the durable queue and answered with its
   * operation id ({@code intake}); the record's decision is {@code answer}.
   */
  ACCEPTED("accepted", 200, Scope.REQUEST, true),
  /** Not refused: a background job's status or cancel answered from the durable queue. */
  OPERATION_STATUS("operation_status", 200, Scope.REQUEST, true),
  /**
   * The durable queue did not acknowledge a background job (or a status read): nothing accepted.
   */
  INTAKE_UNAVAILABLE("intake_unavailable", 503, Scope.POOL, true),
  /** The tenant's background backlog holds its cap of jobs or work ({@code intake}). */
  INTAKE_BACKLOG_FULL("intake_backlog_full", 429, Scope.TENANT, true),
  /** An operation id that is unknown, expired from the store, or another tenant's. */
  UNKNOWN_OPERATION("unknown_operation", 404, Scope.REQUEST, true),
  /**
   * A budget over a billing period is spent ({@code budgets}); the status is the operator's (402 by
   * default, 422 or 429), never a 503. Not retryable before the period renews.
   */
  BUDGET_EXHAUSTED("budget_exhausted", 402, Scope.TENANT, false),
  /** A money budget applies and the request's model has no price ({@code unknownModel: refuse}). */
  BUDGET_UNPRICED("budget_unpriced", 422, Scope.REQUEST, false),
  /**
   * A budget's pace (or the reservations of the requests still running on it) left no room within
   * {@code budgets.maxWait}, or its store is down with {@code failureMode: closed}: retryable.
   */
  BUDGET_PACED("budget_paced", 429, Scope.TENANT, true),
  /** A dispatch marker ({@code x-sluice-dispatch}) that is forged, expired or malformed. */
  DISPATCH_MARKER_INVALID("dispatch_marker_invalid", 403, Scope.REQUEST, true),
  /**
   * An MCP route's body is no JSON-RPC message Sluice can admit (malformed, a batch over {@code
   * mcp.maxBatch} or with more than one {@code tools/call}, a tool name over its bound): answered
   * as a JSON-RPC error, its {@code data.reason} saying which.
   */
  MCP_INVALID("mcp_invalid", 400, Scope.REQUEST, false),
  /** The upstream answered 429 to an admitted request ({@code upstreamErrors}): retryable. */
  UPSTREAM_RATE_LIMITED("upstream_rate_limited", 429, Scope.UPSTREAM, true),
  /** The upstream answered 502 or 503, or Envoy found no healthy upstream: retryable. */
  UPSTREAM_UNAVAILABLE("upstream_unavailable", 503, Scope.UPSTREAM, true),
  /** The upstream reset the request before answering (Envoy's local reply): retryable. */
  UPSTREAM_RESET("upstream_reset", 503, Scope.UPSTREAM, true),
  /** The upstream answered 504, or Envoy's route timeout expired (its local reply): retryable. */
  UPSTREAM_TIMEOUT("upstream_timeout", 504, Scope.UPSTREAM, true),
  /**
   * An agent run's retries of a tool's shed calls in this turn are spent ({@code
   * agentRuns.maxRetriesPerTool}): not retryable in this turn (the next turn starts afresh).
   */
  TURN_RETRIES("turn_retries", 429, Scope.REQUEST, false),
  /**
   * The store of the agent runs' turns did not answer and {@code agentRuns.failureMode} is {@code
   * closed}: retryable, Retry-After 1 s (on an MCP route a {@code TOOL_BACKPRESSURE} error).
   */
  TURN_STORE_UNAVAILABLE("turn_store_unavailable", 503, Scope.POOL, true);

  /** What the refusal is about; rendered as {@code error.scope} in the JSON body. */
  public enum Scope {
    NONE,
    REQUEST,
    TENANT,
    CLASS,
    POOL,
    /** The upstream (model server, provider) failed a request Sluice admitted. */
    UPSTREAM;

    public String code() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private final String code;
  private final int defaultStatus;
  private final Scope scope;
  private final boolean retryable;

  Reason(String code, int defaultStatus, Scope scope, boolean retryable) {
    this.code = code;
    this.defaultStatus = defaultStatus;
    this.scope = scope;
    this.retryable = retryable;
  }

  /**
   * False when a retry of the same request cannot succeed before something the client does not
   * control changes (a budget's period renews): the body then says {@code "retryable": false} and a
   * Retry-After header is sent only with a 429.
   */
  public boolean retryable() {
    return retryable;
  }

  public String code() {
    return code;
  }

  public int defaultStatus() {
    return defaultStatus;
  }

  public Scope scope() {
    return scope;
  }
}
