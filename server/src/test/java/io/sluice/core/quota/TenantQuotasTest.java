package io.sluice.core.quota;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

class TenantQuotasTest {
  private static final long T0 = 1_800_000_000_000L;
  private final InMemoryStore store =
      new InMemoryStore(
          Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC), InMemoryStore.Bounds.DEFAULT);
  private final TenantQuotas quotas =
      new TenantQuotas(store, "test_", TenantQuotas.FailureMode.OPEN);
  private final Tenant acme = new Tenant("acme", new TierPolicy("pro", 1, 0, 2, 1000, 500));

  private static QuotaCheck join(CompletionStage<QuotaCheck> s) {
    return s.toCompletableFuture().join();
  }

  @Test
  void takeRequest_overRpm_refusedTenantRateWithRetryAfterFromRefill() {
    assertThat(join(quotas.takeRequest(acme, T0)).allowed()).isTrue();
    assertThat(join(quotas.takeRequest(acme, T0)).allowed()).isTrue();
    QuotaCheck third = join(quotas.takeRequest(acme, T0));
    assertThat(third.allowed()).isFalse();
    assertThat(third.reason()).isEqualTo(Reason.TENANT_RATE);
    // 2 per minute: one token every 30 s
    assertThat(third.retryAfterMillis()).isBetween(29_000L, 30_000L);
    assertThat(join(quotas.takeRequest(acme, T0 + 30_000)).allowed()).isTrue();
  }

  @Test
  void reserveTokens_concurrentReservationsCannotOvershootBudget() {
    assertThat(join(quotas.reserveTokens(acme, 600, 100, T0)).allowed()).isTrue();
    QuotaCheck second = join(quotas.reserveTokens(acme, 600, 100, T0));
    assertThat(second.allowed()).isFalse();
    assertThat(second.reason()).isEqualTo(Reason.TENANT_TOKENS);
  }

  @Test
  void reserveTokens_outputRefused_refundsTheInputReservation() {
    assertThat(join(quotas.reserveTokens(acme, 100, 500, T0)).allowed()).isTrue();
    // output bucket empty: this one is refused and its 400 input tokens are given back
    assertThat(join(quotas.reserveTokens(acme, 400, 100, T0)).allowed()).isFalse();
    assertThat(join(quotas.reserveTokens(acme, 900, 0, T0)).allowed()).isTrue();
  }

  @Test
  void reconcile_refundsUnusedReservation_andChargesOveruse() {
    join(quotas.reserveTokens(acme, 1000, 500, T0));
    var r = quotas.reconcile(acme, 1000, 500, 200, 100, true, T0).toCompletableFuture().join();
    assertThat(r.refunded()).isEqualTo(1200);
    assertThat(join(quotas.reserveTokens(acme, 800, 400, T0)).allowed()).isTrue();
    var over = quotas.reconcile(acme, 800, 400, 900, 450, true, T0).toCompletableFuture().join();
    assertThat(over.overcharged()).isEqualTo(150);
    assertThat(join(quotas.reserveTokens(acme, 1, 0, T0)).allowed()).isFalse(); // in debt
  }

  @Test
  void release_givesWholeReservationBack() {
    join(quotas.reserveTokens(acme, 1000, 500, T0));
    quotas.release(acme, 1000, 500, T0);
    assertThat(join(quotas.reserveTokens(acme, 1000, 500, T0)).allowed()).isTrue();
  }

  @Test
  void storeFailure_followsFailureMode() {
    TokenBucketStore broken =
        new TokenBucketStore() {
          @Override
          public CompletionStage<TokenBucketResult> take(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            return CompletableFuture.failedFuture(new StoreException("down"));
          }

          @Override
          public CompletionStage<TokenBucketResult> charge(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            return CompletableFuture.failedFuture(new StoreException("down"));
          }

          @Override
          public StoreHealth health() {
            return null;
          }
        };
    QuotaCheck open =
        join(new TenantQuotas(broken, "", TenantQuotas.FailureMode.OPEN).takeRequest(acme, T0));
    assertThat(open.allowed()).isTrue();
    assertThat(open.storeFailed()).isTrue();
    QuotaCheck closed =
        join(
            new TenantQuotas(broken, "", TenantQuotas.FailureMode.CLOSED)
                .reserveTokens(acme, 1, 1, T0));
    assertThat(closed.allowed()).isFalse();
    assertThat(closed.storeFailed()).isTrue();
  }
}
