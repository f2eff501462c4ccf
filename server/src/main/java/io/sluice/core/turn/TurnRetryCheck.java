package io.sluice.core.turn;

import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.Subject;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Retries per tool per turn of an agent run ({@code agentRuns}, docs/mcp.md "Retries per turn"): a
 * request with a trusted run ({@code workflow}) and turn ({@code turn}) asks the {@link TurnLedger}
 * whether its pool (an MCP tool's pool) had a call shed in this turn; if so it is a retry, counted,
 * and past {@code maxRetriesPerTool} refused {@link Reason#TURN_RETRIES} (not retryable: the agent
 * moves on, the next turn starts afresh). Every enforced retryable refusal of such a request (the
 * pool's, a later check's) is recorded as a shed of its pool in its turn. It holds nothing. A store
 * that does not answer follows {@code agentRuns.failureMode} (its default {@code
 * quotas.failureMode}): open lets the call through (the pool's cap still holds), closed refuses it
 * {@link Reason#TURN_STORE_UNAVAILABLE} (retryable, Retry-After 1 s).
 */
public final class TurnRetryCheck implements AdmissionCheck<TurnLedger.Verdict> {
  /** Its place: with the estimate, before the workflow's place (a refused retry takes none). */
  public static final int ORDER = CheckChain.WORKFLOW_PLACE - 50;

  private static final TurnLedger.Verdict TOO_LONG = new TurnLedger.Verdict(false, -1, -1);

  /** The store did not answer and the failure mode is closed. */
  private static final TurnLedger.Verdict STORE_FAILED = new TurnLedger.Verdict(false, -2, -2);

  private final TurnLedger ledger;
  private final AgentRunsPolicy policy;
  private final String namespace;

  /**
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   */
  public TurnRetryCheck(TurnLedger ledger, AgentRunsPolicy policy, String namespace) {
    this.ledger = ledger;
    this.policy = policy;
    this.namespace = namespace;
  }

  /** The check of a snapshot with {@code policy}; left out of the chain when it is off. */
  public static AdmissionCheck.Factory factory(
      TurnLedger ledger, AgentRunsPolicy policy, String namespace) {
    TurnRetryCheck check = new TurnRetryCheck(ledger, policy, namespace);
    return snapshot -> policy.enabled() ? check : null;
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  /** Only requests with both a run and a turn. */
  @Override
  public boolean applies(Request r) {
    return turn(r.subject()) != null;
  }

  @Override
  public boolean store() {
    return true;
  }

  @Override
  public CompletionStage<TurnLedger.Verdict> ask(Request r) {
    Subject s = r.subject();
    String turn = turn(s);
    String run = s.workflow();
    if (turn == null || run == null) {
      return CompletableFuture.completedFuture(TurnLedger.Verdict.FIRST);
    }
    if (turn.length() > AgentRunsPolicy.MAX_TURN_CHARS) {
      return CompletableFuture.completedFuture(TOO_LONG);
    }
    CompletionStage<TurnLedger.Verdict> v;
    try {
      v =
          ledger.call(
              namespace,
              s.pool().name(),
              run,
              turn,
              policy.maxRetriesPerTool(),
              policy.turnTtl().toMillis());
    } catch (RuntimeException e) {
      v = CompletableFuture.failedFuture(e);
    }
    return v.exceptionally(e -> policy.failsOpen() ? TurnLedger.Verdict.FIRST : STORE_FAILED);
  }

  @Override
  public Verdict answered(TurnLedger.Verdict v, Request r) {
    if (v.allowed()) {
      return Continue.INSTANCE;
    }
    if (v == TOO_LONG) {
      return new Refusal(
          Reason.INVALID_REQUEST,
          Reason.INVALID_REQUEST.defaultStatus(),
          0,
          "the turn signal is over " + AgentRunsPolicy.MAX_TURN_CHARS + " characters");
    }
    if (v == STORE_FAILED) {
      return new Refusal(
          Reason.TURN_STORE_UNAVAILABLE,
          Reason.TURN_STORE_UNAVAILABLE.defaultStatus(),
          1,
          "retries per tool per turn: the store did not answer (agentRuns.failureMode closed)");
    }
    return new Refusal(
        Reason.TURN_RETRIES,
        Reason.TURN_RETRIES.defaultStatus(),
        0,
        "retries of shed calls of this tool in this turn are spent (at most "
            + policy.maxRetriesPerTool()
            + " per turn): defer to the next turn");
  }

  /** A retryable refusal of a request with a run and a turn: a shed of its pool in its turn. */
  @Override
  public void refused(Request r, Reason why, long retryAfterSeconds) {
    Subject s = r.subject();
    String turn = turn(s);
    String run = s.workflow();
    if (!shed(why, retryAfterSeconds)
        || turn == null
        || run == null
        || turn.length() > AgentRunsPolicy.MAX_TURN_CHARS) {
      return;
    }
    try {
      var unused =
          ledger
              .shed(namespace, s.pool().name(), run, turn, policy.turnTtl().toMillis())
              .exceptionally(e -> null);
    } catch (RuntimeException e) {
      // not recorded: the next retry of this call counts as a first try
    }
  }

  /** Whether a refusal is a shed: retryable, with a Retry-After (as its JSON-RPC error says). */
  static boolean shed(Reason why, long retryAfterSeconds) {
    return why.retryable() && retryAfterSeconds > 0;
  }

  private static @Nullable String turn(Subject s) {
    String turn = s.signals().get(AgentRunsPolicy.TURN);
    return s.workflow() == null || turn == null || turn.isEmpty() ? null : turn;
  }
}
