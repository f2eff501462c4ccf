/**
 * The rate limit service: Envoy's {@code ShouldRateLimit} with envoyproxy/ratelimit's semantics
 * (wire codecs {@link io.sluice.rls.RlsRequestReader} / {@link io.sluice.rls.RlsAnswer}), evaluated
 * by {@link io.sluice.rls.RateLimitEvaluator} on the store ports.
 */
@NullMarked
package io.sluice.rls;

import org.jspecify.annotations.NullMarked;
