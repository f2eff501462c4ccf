package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.adapt.SharedLimit;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The behaviour every {@link LimitStore} must show, checked against its Java statement ({@link
 * SharedLimit}): the same pool limit, cause and baselines for random exchanges of several replicas;
 * decreases as a minimum, growth only from the pool's current value and not within the gap, the
 * pause extended to the latest end. Subclasses provide the store.
 */
public abstract class LimitStoreContractTest {
  private static final long HOUR = 3_600_000L;

  protected abstract LimitStore store();

  private LimitStore.Shared get(String pool, LimitStore.Exchange x) throws Exception {
    return store().exchange("limit_test_", pool, x).toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  private static String freshPool() {
    return "p" + Long.toHexString(System.nanoTime());
  }

  private static LimitStore.Exchange proposal(double from, double to, long gapMillis) {
    return new LimitStore.Exchange(
        new AdaptiveLimit.Proposal(from, to, to < from, AdaptiveLimit.Cause.GROW),
        0,
        Double.NaN,
        Double.NaN,
        gapMillis,
        HOUR);
  }

  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 4, 5, 6})
  void theScriptAppliesTheSameRuleAsItsJavaStatement(long seed) throws Exception {
    SplittableRandom r = new SplittableRandom(seed);
    String pool = freshPool();
    SharedLimit model = new SharedLimit();
    double[] seen = {Double.NaN, Double.NaN, Double.NaN}; // each replica's last view of the pool
    for (int i = 0; i < 200; i++) {
      int replica = r.nextInt(3);
      AdaptiveLimit.Proposal p = null;
      if (r.nextInt(4) != 0) {
        double from = Double.isNaN(seen[replica]) ? 0.25 : seen[replica];
        boolean shrink = r.nextBoolean();
        double to = shrink ? from * (0.5 + 0.5 * r.nextDouble()) : from + 0.03125;
        p =
            new AdaptiveLimit.Proposal(
                from,
                Math.min(1.0, to),
                shrink,
                AdaptiveLimit.Cause.values()[r.nextInt(AdaptiveLimit.Cause.values().length)]);
      }
      double ttft = r.nextInt(3) == 0 ? Double.NaN : 1e8 * (1 + r.nextInt(100));
      double tpot = r.nextInt(3) == 0 ? Double.NaN : 1e6 * (1 + r.nextInt(100));
      LimitStore.Exchange x = new LimitStore.Exchange(p, 0, ttft, tpot, 0, HOUR);
      LimitStore.Shared want = model.exchange(x, 0);
      LimitStore.Shared got = get(pool, x);
      // boxed: NaN (none) equals NaN
      assertThat(Double.valueOf(got.fraction()))
          .as("step %d", i)
          .isEqualTo(Double.valueOf(want.fraction()));
      assertThat(got.cause()).as("step %d", i).isEqualTo(want.cause());
      assertThat(Double.valueOf(got.ttftBaselineNanos()))
          .isEqualTo(Double.valueOf(want.ttftBaselineNanos()));
      assertThat(Double.valueOf(got.tpotBaselineNanos()))
          .isEqualTo(Double.valueOf(want.tpotBaselineNanos()));
      seen[replica] = got.fraction();
    }
  }

  @Test
  void aGrowthFromAStaleValueOrWithinTheGapIsNotApplied() throws Exception {
    String pool = freshPool();
    assertThat(get(pool, proposal(0.25, 0.5, HOUR)).fraction()).isEqualTo(0.5); // first: set
    assertThat(get(pool, proposal(0.5, 0.53, HOUR)).fraction()).isEqualTo(0.5); // within the gap
    assertThat(get(pool, proposal(0.25, 0.6, 0)).fraction()).isEqualTo(0.5); // from a stale value
    assertThat(get(pool, proposal(0.5, 0.53, 0)).fraction()).isEqualTo(0.53);
    assertThat(get(pool, proposal(0.9, 0.6, HOUR)).fraction()).isEqualTo(0.53); // not a decrease
    LimitStore.Shared s = get(pool, proposal(0.9, 0.4, HOUR)); // a decrease from anywhere: min
    assertThat(s.fraction()).isEqualTo(0.4);
    assertThat(s.cause()).isEqualTo(AdaptiveLimit.Cause.GROW);
  }

  @Test
  void aPauseRunsToTheLatestEndAnyReplicaReported() throws Exception {
    String pool = freshPool();
    LimitStore.Shared s =
        get(pool, new LimitStore.Exchange(null, 20_000, Double.NaN, Double.NaN, 0, HOUR));
    assertThat(s.fraction()).isNaN(); // nobody proposed a limit yet
    assertThat(s.pauseRemainingMillis()).isBetween(19_000L, 20_000L);
    s = get(pool, new LimitStore.Exchange(null, 5_000, Double.NaN, Double.NaN, 0, HOUR));
    assertThat(s.pauseRemainingMillis()).isBetween(19_000L, 20_000L);
    s = get(pool, new LimitStore.Exchange(null, 0, Double.NaN, Double.NaN, 0, HOUR));
    assertThat(s.pauseRemainingMillis()).isBetween(19_000L, 20_000L);
  }
}
