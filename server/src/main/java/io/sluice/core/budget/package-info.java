/**
 * Budgets over billing periods: how much a tenant, a route or model group, or the whole Deployment
 * may spend (tokens or money from a price table) per calendar day, week or month in a time zone, or
 * per rolling window. Plain Java and pure: the periods ({@link io.sluice.core.budget.Period}), the
 * prices ({@link io.sluice.core.budget.Prices}), and the rule that reserves at admission, paces the
 * remaining budget over the remaining period and reconciles at the end ({@link
 * io.sluice.core.budget.Ledger}); the state lives in a store (in memory, or shared across replicas)
 * that applies the rule atomically.
 */
@NullMarked
package io.sluice.core.budget;

import org.jspecify.annotations.NullMarked;
