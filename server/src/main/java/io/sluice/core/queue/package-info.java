/**
 * Waiting rooms for admission: the bounded, deadline-aware, tenant-fair queue of one (pool, class)
 * ({@link io.sluice.core.queue.TenantFairQueue}), the scheduler across a pool's classes ({@link
 * io.sluice.core.queue.ClassScheduler}) and the wait predictor behind Retry-After ({@link
 * io.sluice.core.queue.WaitPredictor}). Plain Java, time as an argument.
 */
@NullMarked
package io.sluice.core.queue;

import org.jspecify.annotations.NullMarked;
