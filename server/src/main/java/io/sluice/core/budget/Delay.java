package io.sluice.core.budget;

import java.util.concurrent.CompletionStage;

/**
 * Completes after a while: how a request waiting for the budget (its pace, or running requests'
 * reservations) asks again. The process's scheduler, or a manual one in tests.
 */
@FunctionalInterface
public interface Delay {
  CompletionStage<Void> after(long millis);
}
