package io.sluice.feature.nativeai;

import io.sluice.config.NativeMetadata;
import io.sluice.config.NativeMetadataSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.time.Ticker;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.observability.NativeMetadataMetrics;
import io.sluice.observability.NativeMetadataRecorder;
import io.sluice.store.redis.RedisConnection;
import java.util.List;

/**
 * Envoy's native AI metadata (docs/envoy.md, "Envoy's native AI metadata"): the ext_proc adapter
 * reads the records ({@code extproc.NativeMetadataReader}, under the namespaces of the {@code
 * nativeMetadata} section), the session uses them as its estimate and usage sources ({@code
 * core.estimate.NativeEstimate}, {@code core.session.NativeUsageSource}); this module counts the
 * cross-checks and the estimate error ({@link NativeMetadataRecorder}), and keeps the learned
 * bytes-per-token of the headers' estimates ({@link #BYTES_PER_TOKEN}: one per process, learned by
 * {@link BytesPerTokenLearner}, read by the snapshot's estimator; docs/estimation.md "Learned
 * bytes-per-token").
 */
public final class NativeMetadataFeature implements Feature {
  /**
   * The learned bytes-per-token: one per process on either backend; with Redis the replicas share
   * it and keep it over restarts through the learned reserves' store port ({@code
   * bootstrap.ReserveSharing}, read before the replica reports ready).
   */
  public static final StorePort<LearnedBytesPerToken> BYTES_PER_TOKEN =
      new StorePort<>() {
        @Override
        public String name() {
          return "native-bytes-per-token";
        }

        @Override
        public LearnedBytesPerToken memory(Ticker ticker, boolean isolated) {
          return new LearnedBytesPerToken(LearnedBytesPerToken.Settings.DEFAULTS);
        }

        @Override
        public LearnedBytesPerToken redis(RedisConnection redis) {
          return new LearnedBytesPerToken(LearnedBytesPerToken.Settings.DEFAULTS);
        }

        @Override
        public void configure(LearnedBytesPerToken port, SluiceConfig config) {
          port.reconfigure(settings(config));
        }
      };

  /** The learner's settings of a snapshot: its section's, the prior {@code estimation}'s. */
  static LearnedBytesPerToken.Settings settings(SluiceConfig config) {
    NativeMetadata.LearnedRatio l =
        config.section(NativeMetadataSection.SECTION).learnedBytesPerToken();
    return new LearnedBytesPerToken.Settings(
        l.enabled(),
        config.estimation().bytesPerToken(),
        l.warmup(),
        l.min(),
        l.max(),
        l.maxKeys(),
        l.halfLife().toMillis());
  }

  @Override
  public List<StorePort<?>> storePorts() {
    return List.of(BYTES_PER_TOKEN);
  }

  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    NativeMetadataMetrics meters =
        s.metrics().part(NativeMetadataMetrics.class, NativeMetadataMetrics::new);
    out.listener(new NativeMetadataRecorder(meters));
    LearnedBytesPerToken learned = s.stores().port(BYTES_PER_TOKEN);
    meters.bytesPerToken(s.config().pools().keySet(), learned);
    out.bytesPerToken(learned);
    if (learned.settings().enabled()) {
      out.listener(new BytesPerTokenLearner(learned, s.ticker(), meters));
    }
  }
}
