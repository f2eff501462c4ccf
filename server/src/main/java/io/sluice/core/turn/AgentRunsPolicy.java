package io.sluice.core.turn;

import io.sluice.core.quota.TenantQuotas;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The {@code agentRuns} section (docs/mcp.md, "Retries per turn"): the seed's rule "never retry a
 * shed call in the same turn more than once; cap retries per tool per turn", counted in the store
 * the replicas share per agent run (the trusted {@code workflow} signal), turn (the trusted {@code
 * turn} signal) and tool (its pool).
 *
 * @param enabled count the runs' turns (off by default; needs both signals from a trusted source)
 * @param maxRetriesPerTool retries of a pool's shed calls one turn may make (0: none), past it the
 *     call is refused {@code turn_retries}, not retryable in that turn
 * @param turnTtl how long a turn's record lives after its last write
 * @param maxTurns records one replica keeps in memory (in-memory store only; Redis keeps what the
 *     TTL says)
 * @param failureMode what the check does while the store does not answer: {@code OPEN} lets the
 *     call through (the pool's cap still holds), {@code CLOSED} refuses it {@code
 *     turn_store_unavailable} (retryable, Retry-After 1 s); null: as {@code quotas.failureMode}
 */
public record AgentRunsPolicy(
    boolean enabled,
    int maxRetriesPerTool,
    Duration turnTtl,
    int maxTurns,
    TenantQuotas.@Nullable FailureMode failureMode) {
  public static final AgentRunsPolicy DEFAULTS =
      new AgentRunsPolicy(false, 1, Duration.ofMinutes(10), 100_000, null);

  /** This policy, its failure mode {@code mode} when it names none. */
  public AgentRunsPolicy failureModeOr(TenantQuotas.FailureMode mode) {
    return failureMode != null
        ? this
        : new AgentRunsPolicy(enabled, maxRetriesPerTool, turnTtl, maxTurns, mode);
  }

  /** Whether a call goes on while the store does not answer (null: open). */
  public boolean failsOpen() {
    return failureMode != TenantQuotas.FailureMode.CLOSED;
  }

  /** The signal key of the turn (declared by the section, guarded). */
  public static final String TURN = "turn";

  /** A turn id is at most this long; a longer one is refused as invalid. */
  public static final int MAX_TURN_CHARS = 128;
}
