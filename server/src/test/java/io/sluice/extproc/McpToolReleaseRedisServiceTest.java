package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.share.ShareCoordinator;
import io.sluice.store.LocalRedis;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * {@link McpToolReleaseServiceTest}'s cases with the tool's pool shared through Redis (replica
 * shares on, the tenant's slot across replicas in the store): the slot still comes back at the last
 * body message, on the server's own clock, not at a renewal, a sweep or a store round trip.
 */
class McpToolReleaseRedisServiceTest extends McpToolReleaseServiceTest {
  private final String prefix = LocalRedis.uniquePrefix();

  @BeforeAll
  static void redis() {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "no Redis on 127.0.0.1:6379");
  }

  @Override
  protected String policy() {
    return CONFIG
        + """
        tiers:
          standard: {weight: 1, maxInFlight: 5}
        tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
        replicas: {renewInterval: 100ms, leaseTtl: 5s, keepShareFor: 2s}
        quotas: {keyPrefix: %s}
        rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:%d"}}
        """
            .formatted(prefix, LocalRedis.PORT);
  }

  /** The pool admits on its share only: the whole cap (one replica) once it is granted. */
  @BeforeEach
  void leased() {
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              ShareCoordinator.Status s = server.replicaShares().get("tool-pdf");
              return s != null
                  && s.mode() == ShareCoordinator.Mode.LEASED
                  && s.grantedRequests() == 1;
            });
    assertThat(server.replicaShares().get("tool-pdf").grantedRequests()).isEqualTo(1);
  }
}
