/**
 * Which route, pool, class and request format a request is: {@link
 * io.sluice.routing.RequestResolver} reads the trusted signals (headers Envoy sets, the route's
 * metadata) against the config.
 */
@NullMarked
package io.sluice.routing;

import org.jspecify.annotations.NullMarked;
