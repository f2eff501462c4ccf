/**
 * Retry control: each request classified original or retry from trusted signals and from its
 * operation seen again; a per-tenant (per-pool) retry budget in the spirit of gRPC's retry
 * throttling; duplicate operations refused while the first attempt runs; and a memory of recent
 * refusals that tells a retry honouring Retry-After from an early one. Plain Java: the state lives
 * behind {@link io.sluice.core.retry.AttemptStore} (in memory, or shared across replicas).
 */
@NullMarked
package io.sluice.core.retry;

import org.jspecify.annotations.NullMarked;
