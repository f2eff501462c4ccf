package io.sluice.rls;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService}. Non-blocking: the observer is completed from
 * the store's callback (a unary call has exactly one writer, so no serialization is needed).
 * Failures map to gRPC UNKNOWN with the reference's message, in this one place.
 *
 * <p>Bound with the generated method's schema (so reflection still shows the real service), {@link
 * RlsRequestReader#MARSHALLER} for requests (read from the wire straight into an {@link
 * RlsRequest}) and {@link RlsAnswer#MARSHALLER} for answers, which are written as pre-encoded
 * {@code RateLimitResponse} bytes.
 */
public final class RateLimitServiceAdapter implements BindableService {
  static final MethodDescriptor<RlsRequest, RlsAnswer> SHOULD_RATE_LIMIT =
      RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(
              RlsRequestReader.MARSHALLER, RlsAnswer.MARSHALLER)
          .build();

  private final RateLimitEvaluator evaluator;

  public RateLimitServiceAdapter(RateLimitEvaluator evaluator) {
    this.evaluator = evaluator;
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
    java.util.concurrent.CompletionStage<RlsDecision> stage = evaluator.evaluate(request);
    if (stage instanceof java.util.concurrent.CompletableFuture<RlsDecision> f
        && f.isDone()
        && !f.isCompletedExceptionally()) {
      answer(f.join(), null, responses); // in-process store: answered on this thread
    } else {
      stage.whenComplete((decision, error) -> answer(decision, error, responses));
    }
  }

  private static void answer(
      RlsDecision decision, Throwable error, StreamObserver<RlsAnswer> responses) {
    if (error != null) {
      responses.onError(Status.UNKNOWN.withDescription("internal error").asRuntimeException());
    } else if (decision instanceof RlsDecision.Failed f) {
      responses.onError(Status.UNKNOWN.withDescription(f.message()).asRuntimeException());
    } else {
      responses.onNext(RlsAnswer.of((RlsDecision.Decided) decision));
      responses.onCompleted();
    }
  }
}
