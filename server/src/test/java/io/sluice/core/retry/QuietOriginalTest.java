package io.sluice.core.retry;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A plain original (no operation id, not a retry by its headers) that the store answers with
 * nothing to change ({@link AttemptStore#quietOriginal}: no bucket, or a full one) is classified
 * without a call to {@link AttemptStore#observe}, as that call would have classified it: the same
 * attempts, in the same order, as retry control on a store that always observes; and a bucket a
 * retry drew on is observed again for the originals that refill it.
 */
class QuietOriginalTest {
  /** The in-process store, its observe calls counted; {@code quiet}: it answers quietOriginal. */
  private static final class Counted implements AttemptStore {
    final InMemoryAttemptStore inner = new InMemoryAttemptStore(new FakeTicker(), 10_000);
    final boolean quiet;
    final AtomicInteger observed = new AtomicInteger();

    Counted(boolean quiet) {
      this.quiet = quiet;
    }

    @Override
    public CompletionStage<Observation> observe(Observe o) {
      observed.incrementAndGet();
      return inner.observe(o);
    }

    @Override
    public boolean quietOriginal(@Nullable String budgetKey) {
      return quiet && inner.quietOriginal(budgetKey);
    }

    @Override
    public CompletionStage<Void> complete(String key, String owner, long replayMillis) {
      return inner.complete(key, owner, replayMillis);
    }

    @Override
    public CompletionStage<Void> remember(String k, long ra, String reason, long keepMillis) {
      return inner.remember(k, ra, reason, keepMillis);
    }
  }

  private static RetryControl control(AttemptStore store, boolean budget) {
    return OriginalAttemptReuseTest.control(store, Duration.ZERO, budget);
  }

  private static final AttemptSignals RETRY = new AttemptSignals(1, -1, null);
  private static final AttemptSignals ENVOY_FIRST = new AttemptSignals(0, 1, null);

  /** Originals, a retry that draws on the bucket, originals that refill it, another route. */
  private static List<Attempt> run(RetryControl c) {
    List<Attempt> out = new ArrayList<>();
    String[] routes = {"chat", "chat", "slow", "chat", "chat", "chat", "chat", "slow"};
    AttemptSignals[] signals = {
      AttemptSignals.NONE,
      ENVOY_FIRST,
      AttemptSignals.NONE,
      RETRY,
      AttemptSignals.NONE,
      AttemptSignals.NONE,
      ENVOY_FIRST,
      AttemptSignals.NONE
    };
    for (int i = 0; i < routes.length; i++) {
      out.add(c.check("gpu", routes[i], "acme", null, signals[i], 2).toCompletableFuture().join());
    }
    return out;
  }

  @Test
  void quietOriginals_areClassifiedAsObserved_withoutTheStoreCall() {
    for (boolean budget : new boolean[] {true, false}) {
      Counted observing = new Counted(false);
      Counted quiet = new Counted(true);
      List<Attempt> expected = run(control(observing, budget));
      List<Attempt> got = run(control(quiet, budget));
      assertThat(got).as("budget " + budget).isEqualTo(expected);
      assertThat(observing.observed).hasValue(8);
      if (budget) {
        // the retry draws the bucket: the originals after it refill it (observed), 9 -> 9.5 -> 10
        assertThat(expected.get(4).budgetTokens()).isEqualTo(9.5);
        assertThat(expected.get(5).budgetTokens()).isEqualTo(10.0);
        assertThat(quiet.observed).as("the retry, and the originals on a drawn bucket").hasValue(5);
      } else {
        assertThat(expected.get(0).budgetTokens()).isNaN();
        assertThat(quiet.observed).as("the retry only").hasValue(1);
      }
    }
  }

  @Test
  void aQuietOriginal_withAnOperationId_isObserved() {
    Counted quiet = new Counted(true);
    RetryControl c = control(quiet, true);
    Attempt a =
        c.check("gpu", "chat", "acme", "op-1", AttemptSignals.NONE, 2).toCompletableFuture().join();
    assertThat(a.retry()).isFalse();
    assertThat(a.claimKey()).as("its operation claimed").isNotNull();
    assertThat(quiet.observed).hasValue(1);
  }
}
