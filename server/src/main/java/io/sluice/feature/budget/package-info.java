/**
 * Budgets over billing periods as a feature module ({@link
 * io.sluice.feature.budget.BudgetFeature}).
 */
@NullMarked
package io.sluice.feature.budget;

import org.jspecify.annotations.NullMarked;
