package io.sluice.feature.nativeai;

import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.time.Ticker;
import io.sluice.observability.NativeMetadataMetrics;

/**
 * The learning side of the learned bytes-per-token ({@link LearnedBytesPerToken}): at each release
 * of a request decided at its headers from a content-length, whose answer ran as asked (2xx, not
 * degraded) and reported its input in full (Envoy's native {@code TokenUsage} {@code COMPLETE}, or
 * Sluice's own parse of the whole answer: a {@code PARTIAL} record is charged as a stream cut short
 * and never teaches), the body's bytes over the reported input tokens, under the request's pool,
 * model and tenant. Reads only the event's facts; thread-safe as the learner is.
 */
final class BytesPerTokenLearner implements SessionListener {
  private final LearnedBytesPerToken learned;
  private final Ticker ticker;
  private final NativeMetadataMetrics meters;

  BytesPerTokenLearner(LearnedBytesPerToken learned, Ticker ticker, NativeMetadataMetrics meters) {
    this.learned = learned;
    this.ticker = ticker;
    this.meters = meters;
  }

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
    Usage u = r.usage();
    if (e == null
        || e.tokens().contentLengthBytes() <= 0
        || !u.reported()
        || !f.end().complete()
        || f.end().upstreamStatus() / 100 != 2
        || f.run().degradedRung() != null) {
      return; // not decided from a content-length, or its input not known in full
    }
    TokenEstimate t = e.tokens();
    String pool = f.subject().pool().name();
    if (learned.learn(
        pool,
        t.model(),
        f.subject().tenant().id(),
        t.contentLengthBytes(),
        u.inputTokens(),
        ticker.nanos())) {
      meters.ratioLearned(pool);
    }
  }
}
