package io.sluice.rls;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService}. Non-blocking: the observer is completed from
 * the store's callback (a unary call has exactly one writer, so no serialization is needed).
 *
 * <p>Every call gets exactly one answer and is counted once in {@code sluice.rls.calls{result}}: a
 * decision (OK / OVER_LIMIT, including limits decided by their failure mode); UNKNOWN with the
 * reference's message for its errors ({@link RlsDecision.Failed}); INVALID_ARGUMENT for a request
 * that is not a RateLimitRequest or is out of range ({@link RlsDecision.Invalid}); UNKNOWN
 * "internal error" for anything unexpected (counted {@code internal_error}, logged at most every 10
 * s, no stack trace). A call whose client has gone before the answer is counted in {@code
 * sluice.rls.cancelled}; nothing is thrown back into gRPC.
 *
 * <p>Bound with the generated method's schema (so reflection still shows the real service), {@link
 * RlsRequestReader#MARSHALLER} for requests (read from the wire straight into an {@link
 * RlsRequest}; malformed bytes become {@link RlsRequestReader#MALFORMED}) and {@link
 * RlsAnswer#MARSHALLER} for answers, which are written as pre-encoded {@code RateLimitResponse}
 * bytes.
 */
public final class RateLimitServiceAdapter implements BindableService {
  static final MethodDescriptor<RlsRequest, RlsAnswer> SHOULD_RATE_LIMIT =
      RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(
              RlsRequestReader.MARSHALLER, RlsAnswer.MARSHALLER)
          .build();

  private final RateLimitEvaluator evaluator;
  private final RlsMetrics metrics;

  public RateLimitServiceAdapter(RateLimitEvaluator evaluator) {
    this.evaluator = evaluator;
    this.metrics = evaluator.metrics();
  }

  @Override
  public ServerServiceDefinition bindService() {
    ServiceDescriptor service =
        ServiceDescriptor.newBuilder(RateLimitServiceGrpc.SERVICE_NAME)
            .setSchemaDescriptor(RateLimitServiceGrpc.getServiceDescriptor().getSchemaDescriptor())
            .addMethod(SHOULD_RATE_LIMIT)
            .build();
    return ServerServiceDefinition.builder(service)
        .addMethod(SHOULD_RATE_LIMIT, ServerCalls.asyncUnaryCall(this::shouldRateLimit))
        .build();
  }

  /** One {@code ShouldRateLimit} call, as gRPC hands it over (read by {@link RlsRequestReader}). */
  public void shouldRateLimit(RlsRequest request, StreamObserver<RlsAnswer> responses) {
    if (responses instanceof ServerCallStreamObserver<RlsAnswer> call) {
      // without a handler, onNext after a cancel throws into the store's callback thread
      call.setOnCancelHandler(() -> {});
    }
    if (request == RlsRequestReader.MALFORMED) {
      metrics.invalidRequest("malformed");
      send(new RlsDecision.Invalid("malformed", "malformed RateLimitRequest"), null, responses);
      return;
    }
    CompletionStage<RlsDecision> stage;
    try {
      stage = evaluator.evaluate(request); // never throws; guarded anyway
    } catch (RuntimeException e) {
      metrics.internalError(e);
      send(new RlsDecision.Failed("internal error"), null, responses);
      return;
    }
    if (stage instanceof CompletableFuture<RlsDecision> f
        && f.isDone()
        && !f.isCompletedExceptionally()) {
      send(f.join(), null, responses); // in-process store: answered on this thread
    } else {
      stage.whenComplete((decision, error) -> send(decision, error, responses));
    }
  }

  private void send(
      @Nullable RlsDecision decision,
      @Nullable Throwable error,
      StreamObserver<RlsAnswer> responses) {
    if (responses instanceof ServerCallStreamObserver<RlsAnswer> call && call.isCancelled()) {
      metrics.cancelled();
      return;
    }
    RlsAnswer answer = null;
    Status status;
    if (error != null) {
      metrics.internalError(error);
      status = Status.UNKNOWN.withDescription("internal error");
    } else if (decision instanceof RlsDecision.Failed f) {
      status = Status.UNKNOWN.withDescription(f.message());
    } else if (decision instanceof RlsDecision.Invalid i) {
      status = Status.INVALID_ARGUMENT.withDescription(i.message());
    } else {
      status = Status.OK;
      try {
        // no error: the stage completed with a decision
        answer = RlsAnswer.of((RlsDecision.Decided) java.util.Objects.requireNonNull(decision));
      } catch (RuntimeException e) {
        metrics.internalError(e);
        status = Status.UNKNOWN.withDescription("internal error");
      }
    }
    try {
      if (answer != null) {
        responses.onNext(answer);
        responses.onCompleted();
      } else {
        responses.onError(status.asRuntimeException());
      }
    } catch (RuntimeException e) {
      // the call went away between the check and the write (cancel, deadline, transport)
      metrics.cancelled();
    }
  }
}
