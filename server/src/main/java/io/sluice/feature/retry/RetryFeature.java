package io.sluice.feature.retry;

import io.sluice.config.RetriesSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.retry.AttemptStore;
import io.sluice.core.retry.RetryAttemptCheck;
import io.sluice.core.retry.RetryControl;
import io.sluice.core.retry.RetryPolicy;
import io.sluice.core.time.Ticker;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.observability.RetryMetrics;
import io.sluice.observability.RetryRecorder;
import io.sluice.store.memory.InMemoryAttemptStore;
import io.sluice.store.redis.RedisAttemptStore;
import io.sluice.store.redis.RedisConnection;
import java.util.List;

/**
 * Retry control (docs/configuration.md, "Retries"), registered in one place: its section ({@link
 * RetriesSection}, {@code retries}), its store port ({@link #ATTEMPTS}: in memory, bounded by
 * {@code retries.maxEntries}; on Redis, across replicas, its in-flight claims' late writes undone
 * under {@code attempts}), its check ({@link RetryAttemptCheck}, right after the tenant's request
 * rate, in the chain only while {@code retries.enabled}) and its listener and decision-record part
 * ({@link RetryRecorder} on the process's {@link RetryMetrics}). Retry control's rules are {@link
 * RetryControl}'s, on {@code quotas.keyPrefix} and {@code quotas.failureMode}.
 */
public final class RetryFeature implements Feature {
  /** The attempts' state: shared exactly when the backend is. */
  public static final StorePort<AttemptStore> ATTEMPTS =
      new StorePort<>() {
        @Override
        public String name() {
          return "attempts";
        }

        @Override
        public AttemptStore memory(Ticker ticker, boolean isolated) {
          return isolated
              ? new InMemoryAttemptStore(Ticker.system(), 10_000)
              : new InMemoryAttemptStore(ticker, 100_000);
        }

        @Override
        public AttemptStore redis(RedisConnection redis) {
          return new RedisAttemptStore(redis);
        }

        @Override
        public String lateWriteStore() {
          return RedisAttemptStore.STORE;
        }

        @Override
        public void configure(AttemptStore port, SluiceConfig config) {
          if (port instanceof InMemoryAttemptStore m) { // Redis keeps what its keys' TTLs say
            m.resize(config.section(RetriesSection.SECTION).maxEntries());
          }
        }
      };

  @Override
  public List<StorePort<?>> storePorts() {
    return List.of(ATTEMPTS);
  }

  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    SluiceConfig config = s.config();
    RetryPolicy policy = config.section(RetriesSection.SECTION);
    RetryControl retries =
        new RetryControl(
            policy,
            s.stores().port(ATTEMPTS),
            config.quotas().keyPrefix(),
            config.quotas().failureMode() != SluiceConfig.Quotas.FailureMode.CLOSED,
            s.ticker()::nanos);
    out.check(RetryAttemptCheck.ORDER, RetryAttemptCheck.factory(retries));
    RetryRecorder recorder =
        new RetryRecorder(s.metrics().part(RetryMetrics.class, RetryMetrics::new));
    out.listener(recorder).recordPart(recorder);
  }
}
