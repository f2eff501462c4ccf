/**
 * {@code sluice replay}: the decision log's records replayed against a candidate policy on a
 * virtual clock, through the real admission core (docs/replay.md).
 */
@NullMarked
package io.sluice.bootstrap.replay;

import org.jspecify.annotations.NullMarked;
