/**
 * What Sluice reports: {@link io.sluice.observability.SessionRecorder} turns the admission
 * sessions' events into the Micrometer meters of {@link io.sluice.observability.AdmissionMetrics}
 * (names in {@link io.sluice.observability.MetricNames}, docs/metrics.md) and the decision log's
 * records.
 */
@NullMarked
package io.sluice.observability;

import org.jspecify.annotations.NullMarked;
