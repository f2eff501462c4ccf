package io.sluice.core.retry;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The common request's attempt ({@link RetryControl#check}): a plain original (number 1, no retry,
 * claim, duplicate or refusal) is given the last such {@link Attempt}, and its completed stage,
 * while its classification is the same value (an immutable record), so it allocates neither. The
 * stage is shared: its one caller ({@link RetryAttemptCheck}) only reads it. Thread-safe.
 */
final class OriginalAttempts {
  private volatile @Nullable Original last;

  private record Original(Attempt attempt, CompletableFuture<Attempt> answer) {}

  /** A plain original's attempt: the last one made when it is the same value, else a new one. */
  Attempt of(String signal, double budgetTokens, long replayMillis) {
    Original l = last;
    if (l != null
        && l.attempt().signal().equals(signal)
        && Double.compare(l.attempt().budgetTokens(), budgetTokens) == 0
        && l.attempt().replayMillis() == replayMillis) {
      return l.attempt();
    }
    Attempt a =
        new Attempt(
            1,
            false,
            signal,
            Attempt.NONE,
            Attempt.NONE,
            budgetTokens,
            Attempt.NONE,
            null,
            "",
            replayMillis,
            null,
            false);
    last = new Original(a, CompletableFuture.completedFuture(a));
    return a;
  }

  /** {@code a}, answered: the shared stage of the last plain original when it is that one. */
  CompletableFuture<Attempt> answer(Attempt a) {
    Original l = last;
    return l != null && l.attempt() == a ? l.answer() : CompletableFuture.completedFuture(a);
  }
}
