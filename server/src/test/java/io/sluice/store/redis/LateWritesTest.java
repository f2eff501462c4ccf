package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.sluice.core.store.StoreException;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** {@link LateWrites} without Redis: what needs an undo, retries, the deadline, the bound. */
class LateWritesTest {
  private final LateWrites late = new LateWrites(Ticker.system(), () -> 5, () -> 20);

  @Test
  void aTimeoutMayHaveRun_aCommandRefusedBeforeItWasSentMayNot() {
    assertThat(LateWrites.mayHaveRun(new StoreException("redis: t", new TimeoutException())))
        .isTrue();
    assertThat(LateWrites.mayHaveRun(new RedisCommandTimeoutException("timed out"))).isTrue();
    assertThat(LateWrites.mayHaveRun(new RedisException("Connection closed"))).isTrue();
    assertThat(
            LateWrites.mayHaveRun(
                new StoreException(
                    "redis: x",
                    new RedisException("Currently not connected. Commands are rejected."))))
        .isFalse();
    assertThat(
            LateWrites.mayHaveRun(
                new StoreException("redis: x", new RedisConnectionException("refused"))))
        .isFalse();
  }

  @Test
  void anUndoIsSentAgainUntilAnswered_andCountedWhenItFoundTheWrite() {
    AtomicInteger calls = new AtomicInteger();
    late.undo("s", () -> failTwiceThen(calls, true), 60_000);
    Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> late.pending() == 0);
    assertThat(calls).hasValue(3);
    assertThat(late.undone("s")).isEqualTo(1);

    late.undo("s", () -> CompletableFuture.completedFuture(false), 60_000); // nothing had landed
    late.giveBack(() -> CompletableFuture.completedFuture(true), 60_000); // a release: not counted
    Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> late.pending() == 0);
    assertThat(late.undone("s")).isEqualTo(1);
    assertThat(late.undone("other")).isZero();
  }

  @Test
  void anUndoStopsOnceTheWriteHasExpired() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    late.undo(
        "s",
        () -> {
          calls.incrementAndGet();
          return CompletableFuture.failedFuture(new StoreException("redis: down"));
        },
        100);
    Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> late.pending() == 0);
    int sent = calls.get();
    assertThat(sent).isBetween(2, 20);
    Thread.sleep(100);
    assertThat(calls).hasValue(sent);
    assertThat(late.undone("s")).isZero();
  }

  @Test
  void pendingUndosAreBounded() {
    CompletableFuture<Boolean> never = new CompletableFuture<>();
    for (int i = 0; i < LateWrites.MAX_PENDING + 5; i++) {
      late.undo("s", () -> never, 60_000);
    }
    assertThat(late.pending()).isEqualTo(LateWrites.MAX_PENDING);
    assertThat(late.dropped()).isEqualTo(5);
    never.complete(true);
    assertThat(late.pending()).isZero();
    assertThat(late.undone("s")).isEqualTo(LateWrites.MAX_PENDING);
  }

  private static CompletionStage<Boolean> failTwiceThen(AtomicInteger calls, boolean found) {
    if (calls.incrementAndGet() <= 2) {
      return CompletableFuture.failedFuture(new StoreException("redis: timeout"));
    }
    return CompletableFuture.completedFuture(found);
  }
}
