/**
 * Admission decisions: the controller that admits or rejects token-weighted work against each
 * pool's capacity ({@link io.sluice.core.admission.AdmissionController}), the per-pool state and
 * ledger behind it, and the coordinator that parks and wakes queued requests ({@link
 * io.sluice.core.admission.QueueCoordinator}). Plain Java, time as an argument.
 */
@NullMarked
package io.sluice.core.admission;

import org.jspecify.annotations.NullMarked;
