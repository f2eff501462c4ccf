package io.sluice.core.retry;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import io.sluice.core.retry.RetryPolicy.Budget;
import io.sluice.core.retry.RetryPolicy.Duplicates;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryAttemptStore;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The anonymous tenant's retries are counted per client address ({@link AttemptSignals#client}):
 * its budget bucket, its refusal memory and its operations are each client's own; the port of the
 * connection does not count; the keys' cache is bounded; tenants are not split by address.
 */
class AnonymousClientRetryTest {
  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryAttemptStore store = new InMemoryAttemptStore(ticker, 10_000);

  private static final Duplicates REFUSE =
      new Duplicates(Duplicates.Action.REFUSE, Duration.ZERO, Duration.ofMinutes(10), Map.of());

  private RetryControl control(Budget.Scope scope, RetryPolicy.EarlyRetry early) {
    return new RetryControl(
        new RetryPolicy(
            true, Duration.ofSeconds(60), 10_000, new Budget(true, scope, 10, 0.1), early, REFUSE),
        store,
        "t_",
        true,
        System::nanoTime);
  }

  private static AttemptSignals retryFrom(String address) {
    return new AttemptSignals(1, -1, address);
  }

  private static Attempt check(RetryControl c, String tenant, String op, AttemptSignals s) {
    return c.check("gpu", "chat", tenant, op, s, 2).toCompletableFuture().join();
  }

  @Test
  void oneClientsFakeRetries_spendItsOwnBudget_notAnotherAnonymousClients() {
    RetryControl c = control(Budget.Scope.TENANT, RetryPolicy.EarlyRetry.COUNT);
    for (int i = 0; i < 5; i++) {
      assertThat(check(c, Tenant.ANONYMOUS, null, retryFrom("198.51.100.7:" + i)).refusal())
          .isNull();
    }
    Attempt flood = check(c, Tenant.ANONYMOUS, null, retryFrom("198.51.100.7:9999"));
    assertThat(flood.refusal()).isNotNull();
    assertThat(flood.refusal().reason()).isEqualTo(Reason.RETRY_BUDGET);
    assertThat(flood.refusal().message())
        .contains("tenant anonymous (client 198.51.100.7) in pool gpu");
    Attempt other = check(c, Tenant.ANONYMOUS, null, retryFrom("203.0.113.9:1"));
    assertThat(other.refusal()).as("another client's real retry").isNull();
    assertThat(other.budgetTokens()).isEqualTo(9.0);
    // no address: the one anonymous bucket, untouched by the clients' retries
    assertThat(check(c, Tenant.ANONYMOUS, null, AttemptSignals.NONE).budgetTokens())
        .isCloseTo(10.0, org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void aTenantsBucketIsTheTenants_whateverItsAddress_andScopePoolIsOneBucket() {
    RetryControl c = control(Budget.Scope.TENANT, RetryPolicy.EarlyRetry.COUNT);
    for (int i = 0; i < 5; i++) {
      check(c, "acme", null, retryFrom("198.51.100." + i + ":1"));
    }
    assertThat(check(c, "acme", null, retryFrom("198.51.100.200:1")).refusal()).isNotNull();
    RetryControl pool = control(Budget.Scope.POOL, RetryPolicy.EarlyRetry.COUNT);
    for (int i = 0; i < 5; i++) {
      check(pool, Tenant.ANONYMOUS, null, retryFrom("198.51.100." + i + ":1"));
    }
    assertThat(check(pool, Tenant.ANONYMOUS, null, retryFrom("203.0.113.9:1")).refusal())
        .as("scope pool: one bucket for everyone, as configured")
        .isNotNull();
  }

  @Test
  void refusalMemory_andOperations_areEachClientsOwn() {
    RetryControl c = control(Budget.Scope.TENANT, RetryPolicy.EarlyRetry.REFUSE);
    AttemptSignals a = retryFrom("198.51.100.7:1");
    AttemptSignals b = retryFrom("203.0.113.9:1");
    c.remember("gpu", Tenant.ANONYMOUS, a, null, Reason.POOL_SATURATED, 30);
    Attempt early = check(c, Tenant.ANONYMOUS, null, retryFrom("198.51.100.7:2"));
    assertThat(early.refusal()).isNotNull();
    assertThat(early.refusal().reason()).isEqualTo(Reason.EARLY_RETRY);
    assertThat(check(c, Tenant.ANONYMOUS, null, b).refusal())
        .as("B's retry does not inherit A's refusal")
        .isNull();
    // the same idempotency key from two anonymous clients: two operations
    AttemptSignals first = new AttemptSignals(0, 1, "198.51.100.7:3");
    Attempt held = check(c, Tenant.ANONYMOUS, "op-1", first);
    assertThat(held.claimKey()).isNotNull();
    Attempt otherClient =
        check(c, Tenant.ANONYMOUS, "op-1", new AttemptSignals(0, 1, "[2001:db8::1]:4"));
    assertThat(otherClient.refusal()).as("not a duplicate of another client's operation").isNull();
    Attempt sameClient =
        check(c, Tenant.ANONYMOUS, "op-1", new AttemptSignals(0, 1, "198.51.100.7:5"));
    assertThat(sameClient.refusal()).isNotNull();
    assertThat(sameClient.refusal().reason()).isEqualTo(Reason.DUPLICATE_OPERATION);
  }

  @Test
  void clientKeysCache_isBounded() {
    RetryControl c = control(Budget.Scope.TENANT, RetryPolicy.EarlyRetry.COUNT);
    for (int i = 0; i < RetryControl.MAX_CACHED_CLIENTS + 500; i++) {
      check(
          c,
          Tenant.ANONYMOUS,
          null,
          new AttemptSignals(0, 1, "10.1." + (i / 256) + "." + (i % 256)));
      assertThat(c.cachedClientKeys("gpu")).isLessThanOrEqualTo(RetryControl.MAX_CACHED_CLIENTS);
    }
    assertThat(c.cachedTenantKeys("gpu")).isZero();
  }

  @Test
  void clientHost_dropsThePortOnly() {
    assertThat(AttemptSignals.clientHost("198.51.100.7:40000")).isEqualTo("198.51.100.7");
    assertThat(AttemptSignals.clientHost("[2001:db8::5]:443")).isEqualTo("2001:db8::5");
    assertThat(AttemptSignals.clientHost("2001:db8::5")).isEqualTo("2001:db8::5");
    assertThat(AttemptSignals.clientHost("::1")).isEqualTo("::1");
    assertThat(AttemptSignals.clientHost(" 198.51.100.7 ")).isEqualTo("198.51.100.7");
    assertThat(AttemptSignals.clientHost("host.example:8080")).isEqualTo("host.example");
    assertThat(AttemptSignals.clientHost("a:b:c")).isEqualTo("a:b:c");
    assertThat(AttemptSignals.clientHost("x:123456")).isEqualTo("x:123456");
    assertThat(AttemptSignals.clientHost("")).isNull();
    assertThat(AttemptSignals.clientHost(null)).isNull();
    assertThat(RetryControl.client("acme", new AttemptSignals(1, -1, "198.51.100.7:1"))).isNull();
  }
}
