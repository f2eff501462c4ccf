package io.sluice.core.session;

import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenEstimate;
import org.jspecify.annotations.Nullable;

/**
 * The learned output reserve's learning side: a listener of {@link SessionEvent.Released}
 * (registered beside the metrics, {@code RuntimeFactory}) that teaches {@link OutputReserves} an
 * answer's actual output, reading only the {@link RequestFacts} the event carries. The read side
 * (the reserve a request is decided with) is the session's call. Thread-safe, as the reserves are.
 */
public final class ReserveLearner implements SessionListener {
  private final OutputReserves reserves;

  public ReserveLearner(OutputReserves reserves) {
    this.reserves = reserves;
  }

  /**
   * An answer's actual output, learned for the next requests of its key: a complete one as it is;
   * one cut short (what a stream showed before a cancel or reset) as a lower bound. Only answers
   * that ran as asked (2xx, not degraded: a degraded answer is not the full one) teach it; shadow
   * passes too, so enforcing starts warmed.
   */
  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (!(event instanceof SessionEvent.Released r)) {
      return;
    }
    RequestFacts f = r.facts();
    RequestFacts.Estimate e = f.estimate();
    Charge charge = f.end().charge();
    boolean cut = !f.end().complete();
    if (e == null
        || f.end().upstreamStatus() / 100 != 2
        || f.run().degradedRung() != null
        || (cut && !charge.rule().equals(Charge.STREAMED))) {
      return; // nothing of the answer was seen, or not the full answer
    }
    Subject s = f.subject();
    String pool = s.pool().name();
    String tenant = s.tenant().id();
    double q = s.requestClass().reserveQuantile();
    long cap = e.requestedOutputTokens() / e.answers();
    String model = e.tokens().model();
    if (cut) {
      reserves.recordCut(
          pool, model, e.scope(), tenant, q, cap, e.answers(), charge.outputTokens());
    } else {
      reserves.record(pool, model, e.scope(), tenant, q, cap, e.answers(), charge.outputTokens());
    }
  }

  /**
   * The read side: the learned reserve of a request estimated {@code e} (asking {@code answers}
   * answers): {@code min(cap, estimate)} per answer, the estimate from the key's prior until it has
   * {@code warmup} answers, then its own bound.
   */
  static OutputReserves.Reserve reserve(
      OutputReserves reserves, Subject s, TokenEstimate e, int answers) {
    return reserves.reserve(
        s.pool().name(),
        e.model(),
        scope(s),
        s.tenant().id(),
        s.requestClass().reserveQuantile(),
        e.outputReserveTokens() / answers,
        s.requestClass().defaultOutputTokens(),
        answers,
        e.outputReserveTokens());
  }

  /** The key's scope of a request: its route's name, or its class's when the route has none. */
  static String scope(Subject s) {
    String route = s.route();
    if (route != null && !route.isEmpty()) {
      return route;
    }
    String name = s.requestClass().name();
    ClassScope last = lastClassScope;
    if (last != null && last.name() == name) { // the policy's own name: the same instance
      return last.scope();
    }
    ClassScope fresh = new ClassScope(name, "class:" + name);
    lastClassScope = fresh;
    return fresh.scope();
  }

  /** A class's scope, kept for its next request: one concatenation per class switch. */
  private record ClassScope(String name, String scope) {}

  private static volatile @Nullable ClassScope lastClassScope;
}
