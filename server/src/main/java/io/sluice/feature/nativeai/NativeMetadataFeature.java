package io.sluice.feature.nativeai;

import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.observability.NativeMetadataMetrics;
import io.sluice.observability.NativeMetadataRecorder;

/**
 * Envoy's native AI metadata (docs/envoy.md, "Envoy's native AI metadata"): the ext_proc adapter
 * reads the records ({@code extproc.NativeMetadataReader}, under the namespaces of the {@code
 * nativeMetadata} section), the session uses them as its estimate and usage sources ({@code
 * core.estimate.NativeEstimate}, {@code core.session.NativeUsageSource}); this module counts the
 * cross-checks and the estimate error ({@link NativeMetadataRecorder}).
 */
public final class NativeMetadataFeature implements Feature {
  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    out.listener(
        new NativeMetadataRecorder(
            s.metrics().part(NativeMetadataMetrics.class, NativeMetadataMetrics::new)));
  }
}
