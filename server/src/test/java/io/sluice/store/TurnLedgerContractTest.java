package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.turn.TurnLedger;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link TurnLedger}'s contract, on each backend: a first try is free, a retry of a shed call is
 * counted, and past {@code maxRetries} per pool per turn it is refused; other pools and turns are
 * apart; a turn's record expires its TTL after its last write.
 */
public abstract class TurnLedgerContractTest {
  protected static final long LONG_TTL = 60_000;

  protected abstract TurnLedger store();

  /** A namespace no other test writes under. */
  protected abstract String namespace();

  /** Lets {@code millis} pass on the store's clock (a fake clock, or a bounded real wait). */
  protected abstract void pass(long millis) throws Exception;

  protected TurnLedger.Verdict call(String ns, String pool, String turn, int max, long ttl)
      throws Exception {
    return store()
        .call(ns, pool, "run-1", turn, max, ttl)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  protected void shed(String ns, String pool, String turn, long ttl) throws Exception {
    store().shed(ns, pool, "run-1", turn, ttl).toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  @Test
  void firstTriesAreFree_aSecondRetryOfAShedCallInTheTurnIsRefused() throws Exception {
    String ns = namespace();
    assertThat(call(ns, "tool-pdf", "t1", 1, LONG_TTL)).isEqualTo(TurnLedger.Verdict.FIRST);
    assertThat(call(ns, "tool-pdf", "t1", 1, LONG_TTL).allowed())
        .as("no shed: a new call")
        .isTrue();
    shed(ns, "tool-pdf", "t1", LONG_TTL);
    TurnLedger.Verdict retry = call(ns, "tool-pdf", "t1", 1, LONG_TTL);
    assertThat(retry).isEqualTo(new TurnLedger.Verdict(true, 1, 1));
    shed(ns, "tool-pdf", "t1", LONG_TTL);
    TurnLedger.Verdict second = call(ns, "tool-pdf", "t1", 1, LONG_TTL);
    assertThat(second.allowed()).as("the second retry in the turn").isFalse();
    assertThat(second.sheds()).isEqualTo(2);
    assertThat(second.retries()).isEqualTo(1);
  }

  @Test
  void otherToolsAndTheNextTurnStartAfresh() throws Exception {
    String ns = namespace();
    shed(ns, "tool-pdf", "t1", LONG_TTL);
    assertThat(call(ns, "tool-pdf", "t1", 1, LONG_TTL).allowed()).isTrue();
    assertThat(call(ns, "tool-pdf", "t1", 1, LONG_TTL).allowed()).isFalse();
    assertThat(call(ns, "tool-search", "t1", 1, LONG_TTL)).isEqualTo(TurnLedger.Verdict.FIRST);
    assertThat(call(ns, "tool-pdf", "t2", 1, LONG_TTL)).isEqualTo(TurnLedger.Verdict.FIRST);
  }

  @Test
  void noRetriesAllowed_theFirstRetryIsRefused() throws Exception {
    String ns = namespace();
    shed(ns, "tool-pdf", "t1", LONG_TTL);
    assertThat(call(ns, "tool-pdf", "t1", 0, LONG_TTL).allowed()).isFalse();
  }

  @Test
  void aTurnsRecordExpiresItsTtlAfterItsLastWrite() throws Exception {
    String ns = namespace();
    shed(ns, "tool-pdf", "t1", 200);
    assertThat(call(ns, "tool-pdf", "t1", 0, 200).allowed()).isFalse();
    pass(400);
    assertThat(call(ns, "tool-pdf", "t1", 0, 200))
        .as("expired")
        .isEqualTo(TurnLedger.Verdict.FIRST);
  }
}
