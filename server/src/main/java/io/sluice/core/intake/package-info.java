/**
 * Background intake: a request that asks for background mode (OpenAI Responses {@code background:
 * true}) on a class or route the operator enabled is written to a durable queue in the shared store
 * and answered at once with an operation id, its position and a predicted start window; its status
 * and cancel are answered from the store. Plain Java: the queue lives behind {@link
 * io.sluice.core.intake.JobStore} (in memory, or Redis Streams shared across replicas).
 */
@NullMarked
package io.sluice.core.intake;

import org.jspecify.annotations.NullMarked;
