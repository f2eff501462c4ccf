package io.sluice.core.admission;

import static io.sluice.core.admission.Policies.cls;
import static io.sluice.core.admission.Policies.pool;
import static io.sluice.core.admission.Policies.request;
import static io.sluice.core.admission.Policies.tenant;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 audit: PoolState's per-tenant maps, and TenantCaps' held set (the tenants a replica
 * renews slots of in the shared store), are keyed by tenant ids a client may rotate; they hold only
 * tenants with work in flight, so rotating ids leaves nothing behind once the work ends.
 */
class TenantMapsBoundTest {
  @Test
  void rotatingTenantIds_leaveNoEntryOnceTheirWorkIsReleased() {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool = pool(1_000_000);
    ClassPolicy c = cls("interactive", 0, 1.0, 0.0, true);
    AdmissionController controller =
        new AdmissionController(
            List.of(pool),
            List.of(c),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    List<Permit> permits = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      Decision d =
          controller.decide(
              request(pool, c, tenant("rotated-" + i, 5), 10, time.nanos()), Ask.now(time.nanos()));
      permits.add(((Decision.Admit) d).permit());
    }
    assertThat(controller.pool("p").snapshot(time.nanos()).tenantsInFlight()).isEqualTo(1000);
    for (Permit p : permits) {
      p.release(Outcome.COMPLETED, time.nanos());
    }
    assertThat(controller.pool("p").snapshot(time.nanos()).tenantsInFlight()).isZero();
  }

  /**
   * A store whose answers the test gives: every acquire waits until the test completes it, so a
   * tenant is in the held set while its answer is pending too.
   */
  private static final class ManualSlots implements TenantSlots {
    final List<CompletableFuture<SlotAnswer>> pending = new ArrayList<>();
    int renewed;

    @Override
    public CompletionStage<SlotAnswer> acquire(
        String namespace, String pool, String tenant, String replica, int cap, long ttl) {
      if (tenant.endsWith("-throws")) {
        throw new IllegalStateException("store call failed before it was sent");
      }
      CompletableFuture<SlotAnswer> f = new CompletableFuture<>();
      pending.add(f);
      return f;
    }

    @Override
    public CompletionStage<Void> release(
        String namespace, String pool, String tenant, String replica, long ttl) {
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Void> renew(
        String namespace, String pool, String replica, Map<String, Integer> held, long ttl) {
      renewed += held.size();
      return CompletableFuture.completedFuture(null);
    }
  }

  @Test
  void tenantCaps_rotatingTenantIds_leaveNoHeldEntryOnceTheirRequestsEnd() {
    ManualSlots store = new ManualSlots();
    TenantCaps caps = new TenantCaps(store, "test_", "me", () -> 10_000);
    int n = 1000;
    // Each rotated id ends one way: granted then released, refused by the store (cap reached),
    // the store's answer failed, or the store call threw before it was sent.
    List<CompletionStage<TenantCaps.SlotCheck>> checks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String id = "rotated-" + i + (i % 4 == 3 ? "-throws" : "");
      checks.add(caps.acquire("p", tenant(id, 5), TenantQuotas.FailureMode.CLOSED));
    }
    assertThat(caps.tenants()).as("asked for, answers pending").isEqualTo(n - n / 4);
    for (int i = 0, f = 0; i < n; i++) {
      if (i % 4 == 3) {
        continue;
      }
      CompletableFuture<TenantSlots.SlotAnswer> answer = store.pending.get(f++);
      switch (i % 4) {
        case 0 -> answer.complete(new TenantSlots.SlotAnswer(true, 0));
        case 1 -> answer.complete(new TenantSlots.SlotAnswer(false, 5));
        default -> answer.completeExceptionally(new IllegalStateException("store down"));
      }
    }
    for (int i = 0; i < n; i++) {
      TenantCaps.SlotCheck c = checks.get(i).toCompletableFuture().join();
      assertThat(c.granted()).as("rotated-%d", i).isEqualTo(i % 4 == 0);
    }
    assertThat(caps.tenants()).as("held after the answers").isEqualTo(n / 4);
    assertThat(caps.held()).isEqualTo(n / 4);
    caps.release("p", "never-held"); // a release of nothing adds no entry
    for (int i = 0; i < n; i += 4) {
      caps.release("p", "rotated-" + i);
    }
    assertThat(caps.tenants()).as("tenants left in the held set").isZero();
    assertThat(caps.held()).isZero();
    caps.renew().toCompletableFuture().join();
    assertThat(store.renewed).as("tenants renewed after every request ended").isZero();
  }
}
