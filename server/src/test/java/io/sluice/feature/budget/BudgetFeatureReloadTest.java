package io.sluice.feature.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.time.FakeTicker;
import io.sluice.feature.Contributions;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePorts;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A hot reload keeps what the budget store is owed: the next snapshot's book gets the same
 * write-back for the same store (a store outage's spend is not lost by a reload during it).
 */
class BudgetFeatureReloadTest {
  private static SluiceConfig config(long limit) {
    return ConfigLoader.parse(
        """
        pools: {p: {capacity: 100}}
        classes: {c: {rank: 0}}
        routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
        tiers: {default: {}, pro: {}}
        budgets:
          enabled: true
          maxEntries: %d
          tiers: {pro: [{name: daily, limit: %d, period: day}]}
        """
            .formatted(limit / 10, limit));
  }

  private final InMemoryBudgetStore store = new InMemoryBudgetStore(100);
  private final StorePorts ports =
      new StorePorts() {
        @Override
        @SuppressWarnings("unchecked")
        public <P> P port(io.sluice.feature.StorePort<P> port) {
          return (P) store;
        }
      };
  private final FakeTicker ticker = new FakeTicker();
  private final AdmissionMetrics metrics =
      new AdmissionMetrics(new SimpleMeterRegistry(), ticker::nanos);

  /** A snapshot of a policy with a {@code limit} tokens a day budget, on {@link #store}. */
  private void contribute(BudgetFeature feature, long limit) {
    feature.contribute(
        new FeatureSnapshot(config(limit), ports, metrics, ticker, Clock.systemUTC(), Map.of()),
        new Contributions());
  }

  @Test
  void reload_theSameStoreKeepsItsWriteBack_anotherStoreHasItsOwn() {
    BudgetFeature feature = new BudgetFeature();
    contribute(feature, 10_000);
    WriteBack first = feature.owedTo(store);
    assertThat(first).isNotNull();
    contribute(feature, 20_000);
    assertThat(feature.owedTo(store)).isSameAs(first);
    assertThat(feature.owedTo(new InMemoryBudgetStore(100))).isNull();
  }

  @Test
  void reload_theSameStoreKeepsWhatItLastSaidRemains_theLocalShareBase() {
    BudgetFeature feature = new BudgetFeature();
    contribute(feature, 10_000);
    LastRemaining first = feature.heardFrom(store);
    assertThat(first).isNotNull();
    contribute(feature, 20_000);
    assertThat(feature.heardFrom(store)).isSameAs(first);
    assertThat(feature.heardFrom(new InMemoryBudgetStore(100))).isNull();
    BudgetFeature.BUDGETS.close(store);
    assertThat(feature.heardFrom(store)).isNull();
  }

  @Test
  void drain_theStorePortsCloseDrainsTheWriteBack_andLetsTheStoreGo() {
    BudgetFeature feature = new BudgetFeature();
    contribute(feature, 10_000);
    assertThat(feature.owedTo(store)).isNotNull();
    BudgetFeature.BUDGETS.close(store);
    assertThat(feature.owedTo(store)).isNull();
    BudgetFeature.LOCAL_SHARE.close(store); // nothing owed there: nothing to do
  }
}
