package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.time.FakeTicker;
import io.sluice.core.turn.TurnLedger;
import io.sluice.store.TurnLedgerContractTest;
import org.junit.jupiter.api.Test;

/** The in-process turns on a fake clock, and their bound. */
class InMemoryTurnLedgerContractTest extends TurnLedgerContractTest {
  private final FakeTicker ticker = new FakeTicker();
  private final InMemoryTurnLedger store = new InMemoryTurnLedger(ticker, 1_000);

  @Override
  protected TurnLedger store() {
    return store;
  }

  @Override
  protected String namespace() {
    return "t_";
  }

  @Override
  protected void pass(long millis) {
    ticker.advanceNanos(millis * 1_000_000L);
  }

  @Test
  void invitedTurnsPushOutTheOldest_theMapStaysBounded() throws Exception {
    InMemoryTurnLedger small = new InMemoryTurnLedger(ticker, 100);
    for (int i = 0; i < 10_000; i++) {
      small.shed("t_", "tool", "run", "forged-" + i, LONG_TTL).toCompletableFuture().get();
    }
    assertThat(small.size()).isEqualTo(100);
    assertThat(
            small
                .call("t_", "tool", "run", "forged-9999", 0, LONG_TTL)
                .toCompletableFuture()
                .get()
                .allowed())
        .as("the newest turn is kept")
        .isFalse();
    small.resize(10);
    assertThat(small.size()).isEqualTo(10);
  }
}
