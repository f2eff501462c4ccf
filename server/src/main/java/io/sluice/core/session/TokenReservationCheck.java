package io.sluice.core.session;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.Tenant;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import java.time.Clock;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * The tenant's token budget (tokens per minute): reserves the estimate before the pool decides
 * ({@code tenant_tokens} when used up), refunded when the request does not run (refused, cancelled,
 * a shadow pass enforcement would refuse), cut when a cheaper answer runs instead ({@link
 * Reservation#runsAs}), reconciled with what the request is charged at its end ({@link
 * Reservation#reconcile}, called by the session: the charge is its to compute).
 */
final class TokenReservationCheck implements AdmissionCheck<QuotaCheck> {
  private final TenantQuotas quotas;
  private final Clock clock;
  private final SessionListener listener;

  TokenReservationCheck(TenantQuotas quotas, Clock clock, SessionListener listener) {
    this.quotas = quotas;
    this.clock = clock;
    this.listener = listener;
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  @Override
  public boolean applies(Request r) {
    return TenantQuotas.hasTokenBudget(r.subject().tenant().tier());
  }

  @Override
  public CompletionStage<QuotaCheck> ask(Request r) {
    TokenEstimate e = estimate(r);
    return quotas.reserveTokens(
        r.subject().tenant(), e.inputTokens(), e.outputReserveTokens(), clock.millis());
  }

  private static TokenEstimate estimate(Request r) {
    return Objects.requireNonNull(r.estimate(), "estimate before the token reservation");
  }

  @Override
  public Verdict answered(QuotaCheck check, Request r) {
    TenantRateCheck.countStoreFailure(listener, check);
    if (!check.allowed()) {
      return new Refusal(
          Reason.TENANT_TOKENS,
          429,
          TenantRateCheck.retryAfterSeconds(check.retryAfterMillis()),
          "tenant token budget (tokens per minute) is used up");
    }
    if (check.storeFailed()) {
      return Continue.INSTANCE; // let through by the failure mode: nothing reserved
    }
    TokenEstimate e = estimate(r);
    return new Reservation(this, r.subject().tenant(), e.inputTokens(), e.outputReserveTokens());
  }

  /** The tokens reserved for one request, as taken (then cut). */
  static final class Reservation extends Held {
    private final TokenReservationCheck check;
    private final Tenant tenant;
    private long input;
    private long output;
    private boolean reserved = true; // not yet refunded nor reconciled

    Reservation(TokenReservationCheck check, Tenant tenant, long input, long output) {
      this.check = check;
      this.tenant = tenant;
      this.input = input;
      this.output = output;
    }

    @Override
    protected boolean keptByPass(boolean wouldReject) {
      return !wouldReject; // enforcement charges no refused request; a queued one ran
    }

    @Override
    protected void release(Release how) {
      if (how != Release.ENDED) { // the request did not run: refunded
        refund();
      } // ran: reconciled with its charge
    }

    private void refund() {
      if (reserved) {
        reserved = false;
        check.quotas.release(tenant, input, output, check.clock.millis());
      }
    }

    /** The request runs as {@code e}: gives back what the cheaper answer no longer needs. */
    @Override
    protected void runsAs(TokenEstimate e) {
      if (!reserved) {
        return;
      }
      long lessIn = Math.max(0, input - e.inputTokens());
      long lessOut = Math.max(0, output - e.outputReserveTokens());
      if (lessIn > 0 || lessOut > 0) {
        check.quotas.release(tenant, lessIn, lessOut, check.clock.millis());
        input -= lessIn;
        output -= lessOut;
      }
    }

    /** The request ended charged {@code c}: the reservation is reconciled with it, once. */
    void reconcile(Charge c) {
      if (!reserved) {
        return;
      }
      reserved = false;
      SessionListener l = check.listener;
      var unused =
          check
              .quotas
              .reconcile(
                  tenant,
                  input,
                  output,
                  c.inputTokens(),
                  c.outputTokens(),
                  !c.rule().equals(Charge.RESERVE),
                  check.clock.millis())
              .thenAccept(
                  rc -> {
                    if (rc.refunded() > 0 || rc.overcharged() > 0) {
                      l.on(new SessionEvent.Reconciled(rc.refunded(), rc.overcharged()));
                    }
                  });
    }
  }
}
