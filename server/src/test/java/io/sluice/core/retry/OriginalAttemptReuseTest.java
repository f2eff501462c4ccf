package io.sluice.core.retry;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.retry.RetryPolicy.Budget;
import io.sluice.core.retry.RetryPolicy.Duplicates;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A plain original's attempt (and its completed stage) is given again while its classification is
 * the same value ({@link OriginalAttempts}), and made anew, with the new value, as soon as any part
 * of it differs: the budget's tokens, the signal, the route's replay window.
 */
class OriginalAttemptReuseTest {
  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryAttemptStore store = new InMemoryAttemptStore(ticker, 10_000);

  private RetryControl control(Duration replay) {
    return control(store, replay, true);
  }

  /** Retry control on {@code store}: route {@code slow} replays 7 s, the others {@code replay}. */
  static RetryControl control(AttemptStore store, Duration replay, boolean budget) {
    Duplicates d =
        new Duplicates(
            Duplicates.Action.REFUSE,
            replay,
            Duration.ofMinutes(10),
            Map.of("slow", new Duplicates.Route(Duplicates.Action.REFUSE, Duration.ofSeconds(7))));
    return new RetryControl(
        new RetryPolicy(
            true,
            Duration.ofSeconds(60),
            10_000,
            new Budget(budget, Budget.Scope.TENANT, 10, 0.5),
            RetryPolicy.EarlyRetry.COUNT,
            d),
        store,
        "t_",
        true,
        System::nanoTime);
  }

  private static Attempt check(RetryControl c, String route, AttemptSignals s) {
    return c.check("gpu", route, "acme", null, s, 2).toCompletableFuture().join();
  }

  @Test
  void sameOriginal_isTheSameAttempt_anotherValue_isANewOneWithThatValue() {
    RetryControl c = control(Duration.ZERO);
    Attempt first = check(c, "chat", AttemptSignals.NONE);
    assertThat(first.retry()).isFalse();
    assertThat(first.number()).isEqualTo(1);
    assertThat(first.budgetTokens()).isEqualTo(10.0);
    assertThat(check(c, "chat", AttemptSignals.NONE)).isSameAs(first);
    assertThat(c.check("gpu", "chat", "acme", null, AttemptSignals.NONE, 2))
        .as("its completed stage, shared")
        .isSameAs(c.check("gpu", "chat", "acme", null, AttemptSignals.NONE, 2));
    // a retry spends a token: the next original reads 9.5 after its refill, not the 10 cached
    Attempt retry = check(c, "chat", new AttemptSignals(1, -1, null));
    assertThat(retry.budgetTokens()).isEqualTo(9.0);
    Attempt after = check(c, "chat", AttemptSignals.NONE);
    assertThat(after).isNotSameAs(first);
    assertThat(after.budgetTokens()).isEqualTo(9.5);
    assertThat(after).isEqualTo(classified(9.5, Attempt.NONE, 0));
    // another route's replay window is part of the value
    Attempt slow = check(c, "slow", AttemptSignals.NONE);
    assertThat(slow.replayMillis()).isEqualTo(7_000);
    assertThat(slow).isEqualTo(classified(10.0, Attempt.NONE, 7_000));
  }

  @Test
  void firstAttemptSignalled_byEnvoy_keepsItsOwnSignal() {
    RetryControl c = control(Duration.ZERO);
    Attempt plain = check(c, "chat", AttemptSignals.NONE);
    Attempt counted = check(c, "chat", new AttemptSignals(0, 1, null)); // attempt 1: no retry
    assertThat(counted.retry()).isFalse();
    assertThat(counted).isEqualTo(plain);
    OriginalAttempts o = new OriginalAttempts();
    Attempt none = o.of(Attempt.NONE, 10.0, 0);
    Attempt sdk = o.of(Attempt.SDK, 10.0, 0);
    assertThat(sdk).isEqualTo(classified(10.0, Attempt.SDK, 0));
    assertThat(o.of(Attempt.SDK, 10.0, 0)).isSameAs(sdk);
    assertThat(o.of(Attempt.NONE, 10.0, 0)).isEqualTo(none).isNotSameAs(sdk);
    assertThat(o.of(Attempt.NONE, Double.NaN, 0).budgetTokens()).isNaN();
  }

  private static Attempt classified(double tokens, String signal, long replayMillis) {
    return new Attempt(
        1,
        false,
        signal,
        Attempt.NONE,
        Attempt.NONE,
        tokens,
        Attempt.NONE,
        null,
        "",
        replayMillis,
        null,
        false);
  }
}
