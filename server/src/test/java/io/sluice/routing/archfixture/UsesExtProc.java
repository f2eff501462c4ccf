package io.sluice.routing.archfixture;

/**
 * Breaks the routing rule, and with {@link io.sluice.extproc.archfixture.UsesRouting} the no-cycle
 * rule, on purpose (test sources only; see LayerRulesBiteTest).
 */
public final class UsesExtProc {
  Object adapter() {
    return io.sluice.extproc.archfixture.UsesRouting.class;
  }
}
