package io.sluice.core.archfixture;

/**
 * With {@link io.sluice.core.quota.archfixture.UsesCoreFixture}, a deliberate cycle between two
 * subpackages of {@code io.sluice.core} ({@code archfixture} and {@code quota}): breaks the core's
 * no-cycle rule, not the top-level one (test sources only; see LayerRulesBiteTest).
 */
public final class UsesQuotaFixture {
  Object quota() {
    return io.sluice.core.quota.archfixture.UsesCoreFixture.class;
  }
}
