/**
 * Sharing one pool's capacity among the replicas that share a store: the allocation rule ({@link
 * io.sluice.core.share.ShareAllocator}), the store port that grants leases atomically ({@link
 * io.sluice.core.share.ShareStore}) and the per-process coordinator that renews them and applies
 * the grants to the pools ({@link io.sluice.core.share.ShareCoordinator}). Plain Java, time as an
 * argument (docs/decisions/0008-replica-shares.md).
 */
@NullMarked
package io.sluice.core.share;

import org.jspecify.annotations.NullMarked;
