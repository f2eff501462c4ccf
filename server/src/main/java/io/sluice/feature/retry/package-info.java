/** Retry control as a feature module: {@link io.sluice.feature.retry.RetryFeature}. */
@NullMarked
package io.sluice.feature.retry;

import org.jspecify.annotations.NullMarked;
