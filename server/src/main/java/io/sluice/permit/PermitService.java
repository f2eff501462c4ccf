package io.sluice.permit;

import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.sluice.api.v1.AcquireRequest;
import io.sluice.api.v1.AcquireResponse;
import io.sluice.api.v1.ReleaseRequest;
import io.sluice.api.v1.ReleaseResponse;
import io.sluice.api.v1.RenewRequest;
import io.sluice.api.v1.RenewResponse;
import io.sluice.core.permit.PermitDesk;
import java.util.concurrent.TimeUnit;

/**
 * {@code sluice.v1.Permits} (proto/sluice/v1/permit.proto) on the gRPC port: each call is one call
 * of the {@link PermitDesk}; no handler blocks (an Acquire that waits in the pool's queue is
 * answered from the waiter; a cancelled call gives its queued place up). Bad input is a gRPC
 * status: {@code INVALID_ARGUMENT}, {@code NOT_FOUND}, {@code RESOURCE_EXHAUSTED}, {@code
 * UNAVAILABLE} (the lease store did not answer). The method descriptors are written here (no
 * generated stub): {@link #ACQUIRE}, {@link #RENEW}, {@link #RELEASE}, which the Java client
 * ({@link PermitClient}) uses too.
 */
public final class PermitService implements BindableService {
  /** The service's full name. */
  public static final String SERVICE = "sluice.v1.Permits";

  public static final MethodDescriptor<AcquireRequest, AcquireResponse> ACQUIRE =
      unary("Acquire", AcquireRequest.getDefaultInstance(), AcquireResponse.getDefaultInstance());
  public static final MethodDescriptor<RenewRequest, RenewResponse> RENEW =
      unary("Renew", RenewRequest.getDefaultInstance(), RenewResponse.getDefaultInstance());
  public static final MethodDescriptor<ReleaseRequest, ReleaseResponse> RELEASE =
      unary("Release", ReleaseRequest.getDefaultInstance(), ReleaseResponse.getDefaultInstance());

  private static <Q extends com.google.protobuf.Message, R extends com.google.protobuf.Message>
      MethodDescriptor<Q, R> unary(String name, Q req, R resp) {
    return MethodDescriptor.<Q, R>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
        .setRequestMarshaller(ProtoUtils.marshaller(req))
        .setResponseMarshaller(ProtoUtils.marshaller(resp))
        .build();
  }

  private final PermitDesk desk;

  public PermitService(PermitDesk desk) {
    this.desk = desk;
  }

  @Override
  public ServerServiceDefinition bindService() {
    return ServerServiceDefinition.builder(SERVICE)
        .addMethod(ACQUIRE, ServerCalls.asyncUnaryCall(this::acquire))
        .addMethod(RENEW, ServerCalls.asyncUnaryCall(this::renew))
        .addMethod(RELEASE, ServerCalls.asyncUnaryCall(this::release))
        .build();
  }

  void acquire(AcquireRequest q, StreamObserver<AcquireResponse> out) {
    if (q.getMaxWaitMs() < 0 || q.getMaxWaitMs() > TimeUnit.HOURS.toMillis(1)) {
      out.onError(
          Status.INVALID_ARGUMENT
              .withDescription("max_wait_ms: " + q.getMaxWaitMs() + " (expected: 0..3600000)")
              .asRuntimeException());
      return;
    }
    PermitDesk.Cancel cancel =
        desk.acquire(
            new PermitDesk.Request(
                q.getPool(),
                q.getTenant(),
                q.getClassName(),
                q.getWork(),
                TimeUnit.MILLISECONDS.toNanos(q.getMaxWaitMs()),
                q.getOperationId()),
            a -> answer(a, out));
    if (out instanceof ServerCallStreamObserver<AcquireResponse> call) {
      call.setOnCancelHandler(cancel::cancel);
    }
  }

  private static void answer(PermitDesk.Answer a, StreamObserver<AcquireResponse> out) {
    AcquireResponse.Outcome outcome;
    switch (a.kind()) {
      case GRANTED -> outcome = AcquireResponse.Outcome.GRANTED;
      case QUEUED_THEN_GRANTED -> outcome = AcquireResponse.Outcome.QUEUED_THEN_GRANTED;
      case REFUSED -> outcome = AcquireResponse.Outcome.REFUSED;
      default -> {
        fail(a, out);
        return;
      }
    }
    try {
      out.onNext(
          AcquireResponse.newBuilder()
              .setOutcome(outcome)
              .setPermitId(a.permitId())
              .setLeaseMs(TimeUnit.NANOSECONDS.toMillis(a.leaseNanos()))
              .setReason(a.reason())
              .setRetryAfterMs(TimeUnit.SECONDS.toMillis(a.retryAfterSeconds()))
              .setMessage(a.message())
              .setWaitedMs(TimeUnit.NANOSECONDS.toMillis(a.waitedNanos()))
              .build());
      out.onCompleted();
    } catch (RuntimeException e) {
      // the call is gone (cancelled): a granted permit's lease brings it back
    }
  }

  void renew(RenewRequest q, StreamObserver<RenewResponse> out) {
    var unused =
        desk.renew(q.getPermitId())
            .whenComplete(
                (a, e) -> {
                  if (e != null || a.kind() != PermitDesk.Answer.Kind.GRANTED) {
                    fail(e != null ? storeDown() : a, out);
                    return;
                  }
                  complete(
                      out,
                      RenewResponse.newBuilder()
                          .setLeaseMs(TimeUnit.NANOSECONDS.toMillis(a.leaseNanos()))
                          .build());
                });
  }

  void release(ReleaseRequest q, StreamObserver<ReleaseResponse> out) {
    var unused =
        desk.release(q.getPermitId(), q.getActualWork())
            .whenComplete(
                (a, e) -> {
                  if (e != null
                      || a.kind() == PermitDesk.Answer.Kind.INVALID
                      || a.kind() == PermitDesk.Answer.Kind.UNAVAILABLE) {
                    fail(e != null ? storeDown() : a, out);
                    return;
                  }
                  complete(
                      out,
                      ReleaseResponse.newBuilder()
                          .setReleased(a.kind() == PermitDesk.Answer.Kind.GRANTED)
                          .build());
                });
  }

  private static PermitDesk.Answer storeDown() {
    return new PermitDesk.Answer(
        PermitDesk.Answer.Kind.UNAVAILABLE, "", 0, "", 0, "permit store: no answer", 0);
  }

  private static <T> void complete(StreamObserver<T> out, T response) {
    try {
      out.onNext(response);
      out.onCompleted();
    } catch (RuntimeException e) {
      // the call is gone
    }
  }

  private static void fail(PermitDesk.Answer a, StreamObserver<?> out) {
    Status s =
        switch (a.kind()) {
          case INVALID -> Status.INVALID_ARGUMENT;
          case NOT_FOUND -> Status.NOT_FOUND;
          case TOO_MANY -> Status.RESOURCE_EXHAUSTED;
          case UNAVAILABLE -> Status.UNAVAILABLE;
          default -> Status.INTERNAL;
        };
    try {
      out.onError(s.withDescription(a.message()).asRuntimeException());
    } catch (RuntimeException e) {
      // the call is gone
    }
  }
}
