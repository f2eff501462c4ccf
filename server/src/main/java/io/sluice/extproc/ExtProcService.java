package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * {@code envoy.service.ext_proc.v3.ExternalProcessor/Process}: one bidi stream per HTTP request.
 * Handlers never block; they run on the transport threads.
 */
public final class ExtProcService extends ExternalProcessorGrpc.ExternalProcessorImplBase {
  private final Supplier<AdmissionRuntime> runtime;
  private final BooleanSupplier draining;
  private final Set<ExtProcStream> live = ConcurrentHashMap.newKeySet();

  public ExtProcService(Supplier<AdmissionRuntime> runtime, BooleanSupplier draining) {
    this.runtime = runtime;
    this.draining = draining;
  }

  @Override
  public StreamObserver<ProcessingRequest> process(StreamObserver<ProcessingResponse> responses) {
    ServerCallStreamObserver<ProcessingResponse> call =
        (ServerCallStreamObserver<ProcessingResponse>) responses;
    if (draining.getAsBoolean()) {
      // Non-OK so Envoy applies failure_mode_allow; never OK (that would admit the request).
      call.onError(
          Status.UNAVAILABLE.withDescription("sluice is shutting down").asRuntimeException());
      return NoopObserver.INSTANCE;
    }
    ExtProcStream[] self = new ExtProcStream[1];
    ExtProcStream stream =
        new ExtProcStream(
            runtime.get(), call, InitialMetadata.KEY.get(), () -> live.remove(self[0]));
    self[0] = stream;
    live.add(stream);
    call.setOnCancelHandler(stream::onCancel);
    return stream;
  }

  /** Streams still open (for graceful shutdown). */
  public int liveStreams() {
    return live.size();
  }

  /** After the grace period: release every remaining permit and end the streams non-OK. */
  public void shutdownStreams() {
    for (ExtProcStream s : List.copyOf(live)) {
      s.shutdown();
    }
  }

  private enum NoopObserver implements StreamObserver<ProcessingRequest> {
    INSTANCE;

    @Override
    public void onNext(ProcessingRequest value) {}

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }
}
