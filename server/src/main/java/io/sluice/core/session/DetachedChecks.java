package io.sluice.core.session;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.AdmissionCheck.Held;
import io.sluice.core.session.AdmissionCheck.Refusal;
import io.sluice.core.session.AdmissionCheck.Release;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot's pre-decision checks ({@link CheckChain}) for a request that has no session: a permit
 * of the permit API ({@code core.permit.PermitDesk}), so a permit is refused by the same tenant
 * rate, token budget, tenant slot, workflow place and feature checks a request is. Runs every check
 * that applies, in order, one after the other (each store's answer continues the run on the thread
 * that answered: one run is never entered twice at once); its estimate is empty (a permit names
 * work units, no tokens). What the checks hold is given back exactly once, in reverse order: at
 * once on a refusal, else by {@link Holds#release}.
 */
public final class DetachedChecks {
  private static final TokenEstimate NO_TOKENS =
      new TokenEstimate(
          0, 0, TokenEstimate.METHOD_DEFAULT, null, null, false, false, FanOut.NONE, -1);

  private DetachedChecks() {}

  /** What the run answers: the holds when every check let it on, else the refusal. */
  public record Result(@Nullable Refusal refusal, Holds holds) {}

  /** The checks' holds of one run; {@link #release} gives them back once. */
  public static final class Holds {
    private final List<Held> held = new ArrayList<>(2);
    private boolean released;

    /** Gives every hold back, in reverse order ({@code ran}: it ran and ended; else cancelled). */
    public void release(boolean ran) {
      release(ran ? Release.ENDED : Release.CANCELLED);
    }

    void release(Release how) {
      List<Held> all;
      synchronized (this) {
        if (released) {
          return;
        }
        released = true;
        all = List.copyOf(held);
      }
      for (int i = all.size() - 1; i >= 0; i--) {
        all.get(i).releaseOnce(how);
      }
    }

    synchronized void keep(Held h) {
      held.add(h);
    }

    /** Holds kept (tests). */
    public synchronized int size() {
      return held.size();
    }
  }

  /** Runs {@code chain}'s checks for {@code subject} asking {@code workUnits}. */
  public static CompletionStage<Result> run(CheckChain chain, Subject subject, long workUnits) {
    AdmissionCheck.Request request =
        new AdmissionCheck.Request() {
          @Override
          public Subject subject() {
            return subject;
          }

          @Override
          public TokenEstimate estimate() {
            return NO_TOKENS;
          }

          @Override
          public long workUnits() {
            return workUnits;
          }
        };
    CompletableFuture<Result> done = new CompletableFuture<>();
    step(chain.checks(), 0, request, new Holds(), done);
    return done;
  }

  private static void step(
      List<AdmissionCheck<?>> checks,
      int i,
      AdmissionCheck.Request r,
      Holds holds,
      CompletableFuture<Result> done) {
    int next = i;
    while (next < checks.size() && !checks.get(next).applies(r)) {
      next++;
    }
    if (next == checks.size()) {
      done.complete(new Result(null, holds));
      return;
    }
    ask(checks, next, checks.get(next), r, holds, done);
  }

  private static <A> void ask(
      List<AdmissionCheck<?>> checks,
      int i,
      AdmissionCheck<A> c,
      AdmissionCheck.Request r,
      Holds holds,
      CompletableFuture<Result> done) {
    CompletionStage<A> asked;
    try {
      asked = c.ask(r);
    } catch (RuntimeException e) {
      refuse(holds, done, unavailable());
      return;
    }
    var unused =
        asked.whenComplete(
            (a, e) -> {
              if (e != null || a == null) {
                refuse(holds, done, unavailable());
                return;
              }
              AdmissionCheck.Verdict v = c.answered(a, r);
              Refusal refusal = null;
              if (v instanceof Held h) {
                holds.keep(h);
                refusal = h.refusal();
              } else if (v instanceof Refusal f) {
                refusal = f;
              } else if (v instanceof AdmissionCheck.Answered ans) {
                refusal = new Refusal(ans.reason(), ans.status(), 0, ans.reason().code());
              }
              if (refusal != null) {
                refuse(holds, done, refusal);
              } else {
                step(checks, i + 1, r, holds, done);
              }
            });
  }

  private static Refusal unavailable() {
    return new Refusal(Reason.POOL_SATURATED, 503, 1, "a check's store did not answer");
  }

  private static void refuse(Holds holds, CompletableFuture<Result> done, Refusal r) {
    holds.release(Release.REFUSED);
    done.complete(new Result(r, holds));
  }
}
