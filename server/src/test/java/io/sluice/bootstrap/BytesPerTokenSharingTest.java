package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.time.FakeTicker;
import io.sluice.observability.NativeMetadataMetrics;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryReserveStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;

/**
 * The learned bytes-per-token shared by the replicas through the learned reserves' store port
 * ({@link ReserveSharing#bytesPerToken}): a new replica reads the shared ratio at start, two
 * replicas warm a key together, a restart keeps what was learned, and the source gauge says which.
 */
class BytesPerTokenSharingTest {
  private static final LearnedBytesPerToken.Settings S =
      new LearnedBytesPerToken.Settings(true, 4.0, 8, 1.5, 16, 64, 3_600_000);

  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final InMemoryReserveStore store = new InMemoryReserveStore(clock);
  private final FakeTicker ticker = new FakeTicker(Long.MAX_VALUE - 3_600_000_000_000L);
  private final OutputReserves reserves = new OutputReserves(OutputReserves.Settings.DEFAULTS);

  private ReserveSharing sharing(LearnedBytesPerToken l) {
    return new ReserveSharing(
        ReserveSharing.bytesPerToken(l, reserves, ticker),
        store,
        "test_" + ReserveSharing.BYTES_PER_TOKEN_NAMESPACE,
        () -> List.of("gpu"));
  }

  /** {@code n} answers of {@code tenant} at {@code ratio} bytes per token, a second apart. */
  private void answers(LearnedBytesPerToken l, String tenant, int n, double ratio) {
    for (int i = 0; i < n; i++) {
      ticker.advance(Duration.ofSeconds(1));
      l.learn("gpu", "m1", tenant, Math.round(6000 * ratio), 6000, ticker.nanos());
    }
  }

  private static void exchange(ReserveSharing s) throws Exception {
    s.exchange().toCompletableFuture().get();
  }

  @Test
  void aNewReplica_readsTheSharedRatioAtStart_beforeItIsReady() throws Exception {
    LearnedBytesPerToken a = new LearnedBytesPerToken(S);
    answers(a, "acme", 10, 6.0);
    answers(a, "globex", 10, 6.0);
    exchange(sharing(a));

    LearnedBytesPerToken b = new LearnedBytesPerToken(S);
    assertThat(b.bytesPerToken("gpu", "m1")).isEqualTo(4.0);
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try (ReserveSharing sb = sharing(b)) {
      sb.start(timer, Duration.ofSeconds(2)); // returns once read: the server is ready after

      assertThat(b.bytesPerToken("gpu", "m1")).isCloseTo(6.0, within(1e-6));
      assertThat(b.bytesPerToken("gpu", "another-model")).isCloseTo(6.0, within(1e-6));
      assertThat(b.poolSource("gpu")).isEqualTo(LearnedBytesPerToken.Source.SHARED);
      assertThat(b.poolSource("cpu")).isEqualTo(LearnedBytesPerToken.Source.PRIOR);
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void twoReplicas_warmAKeyTogether() throws Exception {
    LearnedBytesPerToken a = new LearnedBytesPerToken(S);
    LearnedBytesPerToken b = new LearnedBytesPerToken(S);
    ReserveSharing sa = sharing(a);
    ReserveSharing sb = sharing(b);
    answers(a, "acme", 4, 6.0);
    answers(b, "acme", 4, 6.0);
    assertThat(a.bytesPerToken("gpu", "m1")).as("4 < warmup 8 each").isEqualTo(4.0);

    exchange(sa);
    exchange(sb);
    exchange(sa);

    assertThat(a.bytesPerToken("gpu", "m1")).isCloseTo(6.0, within(1e-6));
    assertThat(b.bytesPerToken("gpu", "m1")).isCloseTo(6.0, within(1e-6));
    // the store holds each answer once: the next exchange sends nothing again
    assertThat(a.takeAdditions()).isEmpty();
  }

  @Test
  void oneTenantAtOneReplica_doesNotMoveTheOthersRatio() throws Exception {
    LearnedBytesPerToken a = new LearnedBytesPerToken(S);
    LearnedBytesPerToken b = new LearnedBytesPerToken(S);
    answers(b, "honest-1", 20, 5.0);
    answers(b, "honest-2", 20, 5.2);
    exchange(sharing(b));
    answers(a, "poisoner", 500, 16.0); // far more answers than the two others together
    exchange(sharing(a));
    ReserveSharing sb = sharing(b);
    exchange(sb);

    assertThat(b.bytesPerToken("gpu", "m1")).isBetween(4.999, 5.201);
    assertThat(b.bytesPerToken("gpu", null)).isBetween(4.999, 5.201);
    assertThat(a.bytesPerToken("gpu", "m1")).isBetween(4.999, 5.201);
  }

  @Test
  void aRestart_keepsTheLearnedRatio_closeSendsWhatWasLeft() throws Exception {
    LearnedBytesPerToken before = new LearnedBytesPerToken(S);
    ReserveSharing s = sharing(before);
    answers(before, "acme", 12, 3.0); // never exchanged on a timer
    assertThat(before.poolSource("gpu")).isEqualTo(LearnedBytesPerToken.Source.LEARNED);
    s.close();

    LearnedBytesPerToken after = new LearnedBytesPerToken(S);
    exchange(sharing(after));

    assertThat(after.bytesPerToken("gpu", "m1"))
        .isCloseTo(before.bytesPerToken("gpu", "m1"), within(1e-6));
    assertThat(after.poolSource("gpu")).isEqualTo(LearnedBytesPerToken.Source.SHARED);
  }

  @Test
  void sourceGauge_onePerPoolAndSource() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    new NativeMetadataMetrics(registry, ticker::nanos).bytesPerToken(List.of("gpu"), l);
    assertThat(source(registry, "prior")).isEqualTo(1);
    answers(l, "acme", 8, 6.0);
    assertThat(source(registry, "prior")).isZero();
    assertThat(source(registry, "learned")).isEqualTo(1);
    assertThat(source(registry, "shared")).isZero();
  }

  private static double source(SimpleMeterRegistry r, String source) {
    return r.get(NativeMetadataMetrics.BYTES_PER_TOKEN_SOURCE)
        .tags("pool", "gpu", "source", source)
        .gauge()
        .value();
  }
}
