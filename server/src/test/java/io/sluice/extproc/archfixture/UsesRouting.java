package io.sluice.extproc.archfixture;

/** The other half of a deliberate package cycle (test sources only; see LayerRulesBiteTest). */
public final class UsesRouting {
  Object back() {
    return io.sluice.routing.archfixture.UsesExtProc.class;
  }
}
