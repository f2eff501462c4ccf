package io.sluice.bootstrap;

import io.sluice.rls.RlsModule;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The process's services on the store: the stores themselves (memory or Redis, from {@code
 * BACKEND_TYPE}), the rate limit service counting in them, the replica shares and the learned
 * state's sharing exchanged through them, and the store's warm-up. One per process, part of {@link
 * ProcessServices}; closed by {@link Drain} (or after a failed start).
 */
final class StoreServices {
  final Stores stores;
  final @Nullable RlsModule rls; // null: rateLimit.enabled is false
  final @Nullable ReplicaShares shares; // null: the store is in this process (one replica)
  // the learned state across replicas: the output reserves, the bytes-per-token (none in memory)
  final List<ReserveSharing> learnedSharing;
  final CompletionStage<Void> warm; // the store connected and warm (at once for memory)

  StoreServices(
      Stores stores,
      @Nullable RlsModule rls,
      @Nullable ReplicaShares shares,
      List<ReserveSharing> learnedSharing,
      CompletionStage<Void> warm) {
    this.stores = stores;
    this.rls = rls;
    this.shares = shares;
    this.learnedSharing = List.copyOf(learnedSharing);
    this.warm = warm;
  }
}
