/** Permits for stages Envoy does not front, leased from the pools' own decision. */
@NullMarked
package io.sluice.core.permit;

import org.jspecify.annotations.NullMarked;
