package io.sluice.core.archfixture;

/** Breaks the core's import rules on purpose (test sources only; see LayerRulesBiteTest). */
public final class SeesAdapters {
  Object transport() {
    return io.grpc.Status.class;
  }

  Object adapter() {
    return io.sluice.routing.ResolvedRequest.class;
  }
}
