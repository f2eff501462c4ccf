/**
 * The rate limit service's configuration: envoyproxy/ratelimit's YAML descriptor trees, loaded and
 * validated by {@link io.sluice.rls.config.RateLimitConfigLoader}, and its settings from the
 * environment ({@link io.sluice.rls.config.RlsSettings}).
 */
@NullMarked
package io.sluice.rls.config;

import org.jspecify.annotations.NullMarked;
