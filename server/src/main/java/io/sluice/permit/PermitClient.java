package io.sluice.permit;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.stub.ClientCalls;
import io.sluice.api.v1.AcquireRequest;
import io.sluice.api.v1.AcquireResponse;
import io.sluice.api.v1.ReleaseRequest;
import io.sluice.api.v1.RenewRequest;
import java.util.concurrent.TimeUnit;

/**
 * A tiny blocking client of {@code sluice.v1.Permits} for a caller's own threads (never a gRPC
 * transport thread): {@link #acquire}, {@link #renew}, {@link #release}. See docs/permits.md.
 */
public final class PermitClient {
  private final Channel channel;

  public PermitClient(Channel channel) {
    this.channel = channel;
  }

  /** Asks for a permit, waiting at most {@code maxWaitMs} in the pool's queue. */
  public AcquireResponse acquire(
      String pool, String tenant, String className, long work, long maxWaitMs, String opId) {
    return ClientCalls.blockingUnaryCall(
        channel,
        PermitService.ACQUIRE,
        CallOptions.DEFAULT.withDeadlineAfter(maxWaitMs + 5_000, TimeUnit.MILLISECONDS),
        AcquireRequest.newBuilder()
            .setPool(pool)
            .setTenant(tenant)
            .setClassName(className)
            .setWork(work)
            .setMaxWaitMs(maxWaitMs)
            .setOperationId(opId)
            .build());
  }

  /** Extends the permit's lease; returns the lease in milliseconds. */
  public long renew(String permitId) {
    return ClientCalls.blockingUnaryCall(
            channel,
            PermitService.RENEW,
            CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS),
            RenewRequest.newBuilder().setPermitId(permitId).build())
        .getLeaseMs();
  }

  /** Gives the permit back: whether this call released it. */
  public boolean release(String permitId, long actualWork) {
    return ClientCalls.blockingUnaryCall(
            channel,
            PermitService.RELEASE,
            CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS),
            ReleaseRequest.newBuilder().setPermitId(permitId).setActualWork(actualWork).build())
        .getReleased();
  }
}
