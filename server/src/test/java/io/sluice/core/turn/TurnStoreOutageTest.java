package io.sluice.core.turn;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.admission.Reason;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import io.sluice.store.redis.RedisPorts;
import io.sluice.store.redis.RedisTurnLedger;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 37: retries per tool per turn on a redis-server of the test's own, stopped mid-run
 * (SIGSTOP: hung; then killed: refused): the check follows {@code agentRuns.failureMode}: closed
 * refuses {@code turn_store_unavailable} (503, retryable, Retry-After 1 s), open lets the call
 * through.
 */
class TurnStoreOutageTest {
  private RedisProcess redis;
  private RedisPorts ports;

  private static AgentRunsPolicy policy(TenantQuotas.FailureMode mode) {
    return new AgentRunsPolicy(true, 1, Duration.ofMinutes(10), 1_000, mode);
  }

  private static AdmissionCheck.Verdict decide(TurnRetryCheck check, AdmissionCheck.Request r)
      throws Exception {
    return check.answered(check.ask(r).toCompletableFuture().get(10, TimeUnit.SECONDS), r);
  }

  @AfterEach
  void stop() throws Exception {
    if (ports != null) {
      ports.close();
    }
    if (redis != null) {
      redis.kill();
    }
  }

  @Test
  void redisStopped_closedRefusesWithAStableReasonAndRetryAfter_openAdmits() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    ports = RedisPorts.failingFast(redis);
    RedisTurnLedger ledger = new RedisTurnLedger(ports.connection());
    TurnRetryCheck closed =
        new TurnRetryCheck(ledger, policy(TenantQuotas.FailureMode.CLOSED), "t_");
    TurnRetryCheck open = new TurnRetryCheck(ledger, policy(TenantQuotas.FailureMode.OPEN), "t_");
    AdmissionCheck.Request call = TurnRetryCheckTest.request("run-1", "turn-1");
    assertThat(decide(closed, call)).as("store up").isSameAs(AdmissionCheck.Continue.INSTANCE);

    redis.pause(); // SIGSTOP: every command waits for its 200 ms timeout
    assertRefusedClosed_admittedOpen(closed, open, call);
    redis.resume();
    redis.kill(); // gone: connection refused
    assertRefusedClosed_admittedOpen(closed, open, call);
  }

  private static void assertRefusedClosed_admittedOpen(
      TurnRetryCheck closed, TurnRetryCheck open, AdmissionCheck.Request call) throws Exception {
    AdmissionCheck.Verdict refused = decide(closed, call);
    assertThat(refused).isInstanceOf(AdmissionCheck.Refusal.class);
    AdmissionCheck.Refusal r = (AdmissionCheck.Refusal) refused;
    assertThat(r.reason()).isEqualTo(Reason.TURN_STORE_UNAVAILABLE);
    assertThat(r.reason().code()).isEqualTo("turn_store_unavailable");
    assertThat(r.reason().retryable()).isTrue();
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.retryAfterSeconds()).isEqualTo(1);
    assertThat(decide(open, call)).as("open").isSameAs(AdmissionCheck.Continue.INSTANCE);
    closed.refused(call, r.reason(), r.retryAfterSeconds()); // the shed's record fails quietly
  }
}
