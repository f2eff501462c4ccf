package io.sluice.core.quota.archfixture;

/** The other half of a deliberate core subpackage cycle (test sources only; LayerRulesBiteTest). */
public final class UsesCoreFixture {
  Object back() {
    return io.sluice.core.archfixture.UsesQuotaFixture.class;
  }
}
