package io.sluice.observability.archfixture;

import io.sluice.core.session.AdmissionSession;

/** Breaks the observability-reads-facts rule on purpose (test sources only). */
public final class ReadsTheSession {
  long work(AdmissionSession session) {
    return session.workUnits();
  }
}
