/**
 * The permit API's gRPC adapter (sluice.v1.Permits) over {@link io.sluice.core.permit.PermitDesk}.
 */
@NullMarked
package io.sluice.permit;

import org.jspecify.annotations.NullMarked;
