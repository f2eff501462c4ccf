package io.sluice.rls;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService}. Non-blocking: the observer is completed from
 * the store's callback (a unary call has exactly one writer, so no serialization is needed).
 * Failures map to gRPC UNKNOWN with the reference's message, in this one place.
 */
public final class RateLimitServiceAdapter extends RateLimitServiceGrpc.RateLimitServiceImplBase {
  private final RateLimitEvaluator evaluator;

  public RateLimitServiceAdapter(RateLimitEvaluator evaluator) {
    this.evaluator = evaluator;
  }

  @Override
  public void shouldRateLimit(
      RateLimitRequest request, StreamObserver<RateLimitResponse> responseObserver) {
    java.util.concurrent.CompletionStage<RlsDecision> stage =
        evaluator.evaluate(RlsProtoMapper.toRequest(request));
    if (stage instanceof java.util.concurrent.CompletableFuture<RlsDecision> f
        && f.isDone()
        && !f.isCompletedExceptionally()) {
      answer(f.join(), null, responseObserver); // in-process store: answered on this thread
    } else {
      stage.whenComplete((decision, error) -> answer(decision, error, responseObserver));
    }
  }

  private static void answer(
      RlsDecision decision, Throwable error, StreamObserver<RateLimitResponse> responseObserver) {
    if (error != null) {
      responseObserver.onError(
          Status.UNKNOWN.withDescription("internal error").asRuntimeException());
    } else if (decision instanceof RlsDecision.Failed f) {
      responseObserver.onError(Status.UNKNOWN.withDescription(f.message()).asRuntimeException());
    } else {
      responseObserver.onNext(RlsProtoMapper.toResponse((RlsDecision.Decided) decision));
      responseObserver.onCompleted();
    }
  }
}
