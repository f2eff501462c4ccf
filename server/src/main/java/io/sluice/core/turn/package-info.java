/**
 * Agent runs' turns: retries per tool per turn counted across replicas ({@link
 * io.sluice.core.turn.TurnRetryCheck} over the {@link io.sluice.core.turn.TurnLedger} port).
 */
@NullMarked
package io.sluice.core.turn;

import org.jspecify.annotations.NullMarked;
