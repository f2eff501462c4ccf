package io.sluice.wire.archfixture;

/** Breaks the wire rule on purpose (test sources only; see LayerRulesBiteTest). */
public final class UsesConfig {
  Object config() {
    return io.sluice.config.Secrets.class;
  }
}
