/**
 * A pool's adaptive limit: the latency and overload rules that move it ({@link
 * io.sluice.core.adapt.AdaptiveLimit}, {@link io.sluice.core.adapt.OverloadRule}), its bounds
 * ({@link io.sluice.core.adapt.LimitBounds}) and the store port that shares it among replicas
 * ({@link io.sluice.core.adapt.LimitStore}). Plain Java, time as an argument.
 */
@NullMarked
package io.sluice.core.adapt;

import org.jspecify.annotations.NullMarked;
