package io.sluice.feature.archfixture;

import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;

/** Breaks the listeners-carry-facts rule on purpose: a listener that keeps the live session. */
public final class ListensToTheSession implements SessionListener {
  private final AdmissionSession session;

  public ListensToTheSession(AdmissionSession session) {
    this.session = session;
  }

  @Override
  public void on(SessionEvent event) {
    session.workUnits();
  }
}
