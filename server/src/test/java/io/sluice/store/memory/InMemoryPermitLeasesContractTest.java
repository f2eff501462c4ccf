package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.permit.PermitLeases;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.PermitLeasesContractTest;
import org.junit.jupiter.api.Test;

/** The in-process leases on a fake clock (two replicas in one JVM share one), and their bound. */
class InMemoryPermitLeasesContractTest extends PermitLeasesContractTest {
  private final FakeTicker ticker = new FakeTicker(Long.MAX_VALUE - 1_000_000_000_000L);
  private final InMemoryPermitLeases store = new InMemoryPermitLeases(ticker);

  @Override
  protected PermitLeases store() {
    return store;
  }

  @Override
  protected PermitLeases otherReplica() {
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
  void killedCallersLeasesArePruned_theRecordsStayBounded() throws Exception {
    PermitLeases.Scope s = scope();
    for (int i = 0; i < 10_000; i++) {
      assertThat(get(store.grant(s, "pg/k-" + i, 5, 100))).isTrue();
      pass(20); // each caller dies: its lease runs out within five grants
    }
    assertThat(store.size()).isLessThanOrEqualTo(10);
  }
}
