package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sluice.core.turn.TurnLedger;
import io.sluice.store.LocalRedis;
import io.sluice.store.TurnLedgerContractTest;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code turn_ledger.lua} on the Redis at 127.0.0.1:6379 (skipped when none answers): the port's
 * contract, and two replicas (two connections) sharing a run's turn: a shed on one and the retries
 * on the other count as one turn's.
 */
class RedisTurnLedgerContractTest extends TurnLedgerContractTest {
  private static RedisPorts a;
  private static RedisPorts b;
  private static RedisTurnLedger storeA;
  private static RedisTurnLedger storeB;
  private static RedisClient raw;
  private static StatefulRedisConnection<String, String> conn;

  @BeforeAll
  static void connect() {
    a = LocalRedisStore.open();
    b = LocalRedisStore.open();
    storeA = new RedisTurnLedger(a.connection());
    storeB = new RedisTurnLedger(b.connection());
    raw = RedisClient.create("redis://127.0.0.1:" + LocalRedis.PORT);
    conn = raw.connect();
  }

  @AfterAll
  static void close() {
    if (a != null) {
      a.close();
      b.close();
    }
    if (conn != null) {
      conn.close();
      raw.shutdown();
    }
  }

  @Override
  protected TurnLedger store() {
    return storeA;
  }

  @Override
  protected String namespace() {
    return LocalRedis.uniquePrefix();
  }

  @Override
  protected void pass(long millis) throws Exception {
    Thread.sleep(millis); // Redis's own clock: the key's PEXPIRE
  }

  @Test
  void twoReplicas_aShedOnOneAndRetriesOnTheOther_theSecondRetryIsRefused() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    storeA
        .shed(ns, "tool-pdf", "run-7", "t1", LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    TurnLedger.Verdict first =
        storeB
            .call(ns, "tool-pdf", "run-7", "t1", 1, LONG_TTL)
            .toCompletableFuture()
            .get(5, TimeUnit.SECONDS);
    assertThat(first.allowed()).as("the first retry, on B").isTrue();
    storeB
        .shed(ns, "tool-pdf", "run-7", "t1", LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    TurnLedger.Verdict second =
        storeA
            .call(ns, "tool-pdf", "run-7", "t1", 1, LONG_TTL)
            .toCompletableFuture()
            .get(5, TimeUnit.SECONDS);
    assertThat(second.allowed()).as("the second retry, back on A").isFalse();
    assertThat(second.sheds()).isEqualTo(2);
    long pttl = conn.sync().pttl(TurnLedger.key(ns, "tool-pdf", "run-7", "t1"));
    assertThat(pttl).as("the turn's key carries its TTL").isBetween(1L, LONG_TTL);
  }
}
