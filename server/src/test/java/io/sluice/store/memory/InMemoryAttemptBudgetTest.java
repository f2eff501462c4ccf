package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.retry.AttemptStore.Observation;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.AttemptStoreContractTest;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The in-process store's lock-free path for originals (no operation id, not a retry by headers): it
 * must answer exactly what the locked step would, before any bucket is drawn on, while one is, and
 * once the drawn buckets have expired (fake ticker).
 */
class InMemoryAttemptBudgetTest {
  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryAttemptStore store = new InMemoryAttemptStore(ticker, 1_000);

  private Observation call(boolean retry, String bucket) {
    return store
        .observe(AttemptStoreContractTest.observe("p:", null, "", retry, bucket))
        .toCompletableFuture()
        .join();
  }

  @Test
  void originals_readAFullBucket_andRefillADrawnOne_untilItExpires() {
    assertThat(call(false, "a").budgetTokens()).as("nothing drawn yet").isEqualTo(10.0);
    assertThat(call(true, "a").budgetTokens()).isEqualTo(9.0);
    assertThat(call(true, "a").budgetTokens()).isEqualTo(8.0);
    assertThat(call(false, "b").budgetTokens()).as("another bucket is still full").isEqualTo(10.0);
    assertThat(call(false, "a").budgetTokens()).as("a drawn bucket refills").isEqualTo(8.5);
    assertThat(store.size()).isEqualTo(1); // only the drawn bucket is kept

    ticker.advance(Duration.ofSeconds(30));
    assertThat(call(false, "a").budgetTokens()).as("renewed by the refill").isEqualTo(9.0);
    ticker.advance(Duration.ofSeconds(61));
    assertThat(call(false, "a").budgetTokens()).as("expired: full again").isEqualTo(10.0);
    assertThat(call(true, "a").budgetTokens()).as("drawn on afresh").isEqualTo(9.0);
  }

  @Test
  void aBucketRefilledToFull_staysFull_andRetriesStillDrawOnIt() {
    call(true, "a"); // 9
    call(false, "a"); // 9.5
    assertThat(call(false, "a").budgetTokens()).isEqualTo(10.0);
    assertThat(call(false, "a").budgetTokens()).isEqualTo(10.0);
    for (int i = 0; i < 5; i++) {
      assertThat(call(true, "a").budgetAllowed()).isTrue();
    }
    Observation refused = call(true, "a");
    assertThat(refused.budgetAllowed()).as("at half the bucket, retries stop").isFalse();
    assertThat(call(false, "a").budgetTokens()).isEqualTo(5.5);
  }
}
