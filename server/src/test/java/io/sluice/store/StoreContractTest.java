package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The behaviour every store must show. Subclasses provide the store and a per-run key prefix. */
public abstract class StoreContractTest {
  protected abstract CounterStore counters();

  protected abstract TokenBucketStore buckets();

  protected abstract String prefix();

  private static <T> T await(java.util.concurrent.CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  @Test
  void increment_batch_returnsCountsAfterInOrder() throws Exception {
    String a = prefix() + "a";
    String b = prefix() + "b";
    long[] first =
        await(
            counters()
                .increment(
                    List.of(new CounterIncrement(a, 1, 60, 0), new CounterIncrement(b, 5, 60, 0))));
    long[] second =
        await(
            counters()
                .increment(
                    List.of(new CounterIncrement(b, 2, 60, 0), new CounterIncrement(a, 3, 60, 0))));
    assertThat(first).containsExactly(1, 5);
    assertThat(second).containsExactly(7, 4);
  }

  @Test
  void increment_sameKeyTwiceInBatch_secondSeesFirst() throws Exception {
    String k = prefix() + "dup";
    long[] r =
        await(
            counters()
                .increment(
                    List.of(new CounterIncrement(k, 2, 60, 0), new CounterIncrement(k, 3, 60, 0))));
    assertThat(r).containsExactly(2, 5);
  }

  @Test
  void increment_zeroHits_readsWithoutConsuming() throws Exception {
    String k = prefix() + "zero";
    await(counters().increment(List.of(new CounterIncrement(k, 4, 60, 0))));
    assertThat(await(counters().increment(List.of(new CounterIncrement(k, 0, 60, 0)))))
        .containsExactly(4);
    assertThat(
            await(
                counters().increment(List.of(new CounterIncrement(prefix() + "absent", 0, 60, 0)))))
        .containsExactly(0);
  }

  @Test
  void increment_concurrentCallers_noLostUpdates() throws Exception {
    String k = prefix() + "concurrent";
    List<CompletableFuture<long[]>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(
          counters().increment(List.of(new CounterIncrement(k, 1, 60, 0))).toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
    long[] last = await(counters().increment(List.of(new CounterIncrement(k, 0, 60, 0))));
    assertThat(last).containsExactly(200);
    assertThat(all.stream().map(f -> f.join()[0]).distinct().count()).isEqualTo(200);
  }

  private static final TokenBucketSpec TEN_PER_SECOND = new TokenBucketSpec(10, 10, 1000);

  @Test
  void take_untilEmpty_deniesWithRetryAfterAndTakesNothing() throws Exception {
    String k = prefix() + "tb";
    long now = 1_700_000_000_000L;
    assertThat(await(buckets().take(k, TEN_PER_SECOND, 7, now)).granted()).isTrue();
    TokenBucketResult denied = await(buckets().take(k, TEN_PER_SECOND, 5, now));
    assertThat(denied.granted()).isFalse();
    assertThat(denied.tokens()).isEqualTo(3.0);
    assertThat(denied.retryAfterMillis()).isEqualTo(200);
    TokenBucketResult ok = await(buckets().take(k, TEN_PER_SECOND, 3, now));
    assertThat(ok.granted()).isTrue();
    assertThat(ok.tokens()).isEqualTo(0.0);
    assertThat(ok.fullAfterMillis()).isEqualTo(1000);
  }

  @Test
  void take_afterRefillTime_grantsAgain() throws Exception {
    String k = prefix() + "refill";
    long now = 1_700_000_000_000L;
    await(buckets().take(k, TEN_PER_SECOND, 10, now));
    assertThat(await(buckets().take(k, TEN_PER_SECOND, 1, now + 50)).granted()).isFalse();
    TokenBucketResult later = await(buckets().take(k, TEN_PER_SECOND, 1, now + 100));
    assertThat(later.granted()).isTrue();
    assertThat(later.tokens()).isCloseTo(0.0, org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void take_zero_checksAtLeastOneToken() throws Exception {
    String k = prefix() + "check";
    long now = 1_700_000_000_000L;
    assertThat(await(buckets().take(k, TEN_PER_SECOND, 0, now)).granted()).isTrue();
    await(buckets().take(k, TEN_PER_SECOND, 10, now));
    TokenBucketResult check = await(buckets().take(k, TEN_PER_SECOND, 0, now));
    assertThat(check.granted()).isFalse();
    assertThat(check.retryAfterMillis()).isEqualTo(100);
  }

  @Test
  void take_moreThanCapacity_neverGranted() throws Exception {
    TokenBucketResult r = await(buckets().take(prefix() + "huge", TEN_PER_SECOND, 11, 1_000L));
    assertThat(r.granted()).isFalse();
    assertThat(r.tokens()).isEqualTo(10.0);
  }

  @Test
  void charge_positive_goesIntoDebt_negative_refundsUpToCapacity() throws Exception {
    String k = prefix() + "reconcile";
    long now = 1_700_000_000_000L;
    await(buckets().take(k, TEN_PER_SECOND, 4, now));
    TokenBucketResult over = await(buckets().charge(k, TEN_PER_SECOND, 9, now));
    assertThat(over.granted()).isTrue();
    assertThat(over.tokens()).isEqualTo(-3.0);
    assertThat(await(buckets().take(k, TEN_PER_SECOND, 1, now)).retryAfterMillis()).isEqualTo(400);
    TokenBucketResult refund = await(buckets().charge(k, TEN_PER_SECOND, -100, now));
    assertThat(refund.tokens()).isEqualTo(10.0);
  }

  @Test
  void take_concurrentCallers_neverOvershootCapacity() throws Exception {
    String k = prefix() + "race";
    TokenBucketSpec slow = new TokenBucketSpec(20, 1, 3_600_000);
    long now = 1_700_000_000_000L;
    List<CompletableFuture<TokenBucketResult>> all = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      all.add(buckets().take(k, slow, 1, now).toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
    assertThat(all.stream().filter(f -> f.join().granted()).count()).isEqualTo(20);
  }
}
