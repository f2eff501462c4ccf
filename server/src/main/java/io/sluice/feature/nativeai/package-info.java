/**
 * Envoy's native AI metadata as a feature module: {@link
 * io.sluice.feature.nativeai.NativeMetadataFeature}.
 */
@NullMarked
package io.sluice.feature.nativeai;

import org.jspecify.annotations.NullMarked;
