package io.sluice.observability;

import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;

/**
 * The listener of Envoy's native AI metadata: counts each cross-check the session notes ({@link
 * NativeCheck}) and, at each release with reported usage, the actual ÷ estimated input by the
 * estimate's method (headers-only: {@code native+content-length} or {@code content-length}; with
 * the body: the tokenizer's) on {@link NativeMetadataMetrics}.
 */
public final class NativeMetadataRecorder implements SessionListener {
  private final NativeMetadataMetrics meters;

  public NativeMetadataRecorder(NativeMetadataMetrics meters) {
    this.meters = meters;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Noted.class || type == SessionEvent.Released.class;
  }

  /** The notes it acts on: its check's. */
  @Override
  public boolean hearsNote(Class<?> noteType) {
    return NativeCheck.class.isAssignableFrom(noteType);
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Noted n && n.note() instanceof NativeCheck c) {
      meters.checked(c.kind(), c.status(), c.agreement(), c.used());
    } else if (event instanceof SessionEvent.Released r && r.usage().reported()) {
      RequestFacts.Estimate e = r.facts().estimate();
      if (e != null) {
        meters.inputRatio(e.tokens().method(), r.usage().inputTokens(), e.tokens().inputTokens());
      }
    }
  }
}
