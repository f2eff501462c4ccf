package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.share.ReplicaPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryShareStore;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A server that shares its pools through a store admits on nothing before a pool's first grant —
 * not on the whole pool: its gRPC port is open before the first exchange, and a reload can add a
 * pool between two rounds (docs/scheduling.md §11, "Before its first grant a replica holds
 * nothing").
 */
class ReplicaSharesStartTest {
  static final ClassPolicy CLS =
      ClassPolicy.builder("c").shares(1.0, 0.0).deadline(Duration.ofSeconds(30)).build();
  static final Tenant TENANT = new Tenant("t", TierPolicy.defaults("t"));

  private static Decision call(AdmissionController c, PoolPolicy pool, long now) {
    return c.decide(
        new AdmissionRequest(pool, CLS, TENANT, 1, now, now + 30_000_000_000L, -1, -1),
        Ask.now(now));
  }

  @Test
  void beforeAPoolsFirstGrant_itAdmitsNothing_alsoAPoolAReloadAdds() throws Exception {
    PoolPolicy a = PoolPolicy.builder("a", 100).maxRequests(5).build();
    PoolPolicy b = PoolPolicy.builder("b", 100).maxRequests(5).build();
    FakeTicker ticker = new FakeTicker();
    AdmissionController controller =
        new AdmissionController(
            List.of(a),
            List.of(CLS),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    ReplicaShares shares =
        ReplicaShares.create(
            new InMemoryShareStore(Clock.systemUTC()),
            null,
            null,
            new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS),
            "ns_",
            ReplicaPolicy.DEFAULT,
            controller,
            ticker,
            new SimpleMeterRegistry(),
            Map.of("SLUICE_REPLICA_ID", "r1"));
    assertThat(shares).isNotNull();
    Decision before = call(controller, a, ticker.nanos());
    assertThat(before).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) before).message()).contains("this replica's share: 0 of 5");

    shares.coordinator().tick(controller.pools()).toCompletableFuture().get();
    assertThat(call(controller, a, ticker.nanos())).isInstanceOf(Decision.Admit.class);

    controller.reconfigure(List.of(a, b), List.of(CLS)); // a reload adds pool b
    assertThat(call(controller, b, ticker.nanos())).isInstanceOf(Decision.Reject.class);
    shares.coordinator().tick(controller.pools()).toCompletableFuture().get();
    assertThat(call(controller, b, ticker.nanos())).isInstanceOf(Decision.Admit.class);
    shares.abandon();
  }
}
