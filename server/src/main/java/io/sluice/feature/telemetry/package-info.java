/** OpenTelemetry export and correlation as a feature module: {@link TelemetryFeature}. */
@NullMarked
package io.sluice.feature.telemetry;

import org.jspecify.annotations.NullMarked;
