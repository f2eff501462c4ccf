package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * {@code envoy.service.ext_proc.v3.ExternalProcessor/Process}: one bidi stream per HTTP request.
 * Handlers never block; they run on the transport threads.
 *
 * <p>Bound with the generated method's schema (so reflection still shows the real service), {@link
 * Inbound#MARSHALLER} for requests (request_headers read from the wire) and {@link
 * Answer#MARSHALLER} for answers, which are written as pre-encoded {@code ProcessingResponse}
 * bytes. The stream's gRPC initial metadata (Envoy's {@code grpc_service.initial_metadata} merged
 * with per-route {@code ExtProcPerRoute} overrides; HTTP clients cannot set it, so it is trusted)
 * is handed to the stream when the call starts.
 */
public final class ExtProcService {
  static final MethodDescriptor<Inbound, Answer> PROCESS =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(Inbound.MARSHALLER, Answer.MARSHALLER)
          .build();

  /** The initial metadata of the call being started on this thread (set only around startCall). */
  private static final ThreadLocal<Metadata> STARTING = new ThreadLocal<>();

  private final Supplier<AdmissionRuntime> runtime;
  private final BooleanSupplier draining;
  private final LiveStreams<ExtProcStream> live = new LiveStreams<>();
  private final StreamFaults faults;

  public ExtProcService(Supplier<AdmissionRuntime> runtime, BooleanSupplier draining) {
    this(runtime, draining, StreamFaults.NONE);
  }

  /** With a fault injector (tests). */
  ExtProcService(
      Supplier<AdmissionRuntime> runtime, BooleanSupplier draining, StreamFaults faults) {
    this.runtime = runtime;
    this.draining = draining;
    this.faults = faults;
  }

  /** The service to add to the gRPC server. */
  public ServerServiceDefinition definition() {
    ServerCallHandler<Inbound, Answer> streaming =
        ServerCalls.asyncBidiStreamingCall(this::process);
    ServerCallHandler<Inbound, Answer> withMetadata =
        (call, headers) -> {
          STARTING.set(headers); // process() runs inside startCall, on this thread
          try {
            return streaming.startCall(call, headers);
          } finally {
            STARTING.remove();
          }
        };
    ServiceDescriptor service =
        ServiceDescriptor.newBuilder(ExternalProcessorGrpc.SERVICE_NAME)
            .setSchemaDescriptor(ExternalProcessorGrpc.getServiceDescriptor().getSchemaDescriptor())
            .addMethod(PROCESS)
            .build();
    return ServerServiceDefinition.builder(service).addMethod(PROCESS, withMetadata).build();
  }

  private StreamObserver<Inbound> process(StreamObserver<Answer> responses) {
    return open((ServerCallStreamObserver<Answer>) responses, STARTING.get());
  }

  /** One ext_proc stream on {@code call}, whose gRPC initial metadata is {@code md}. */
  StreamObserver<Inbound> open(ServerCallStreamObserver<Answer> call, Metadata md) {
    if (draining.getAsBoolean()) {
      // Non-OK so Envoy applies failure_mode_allow; never OK (that would admit the request).
      call.onError(
          Status.UNAVAILABLE.withDescription("sluice is shutting down").asRuntimeException());
      return NoopObserver.INSTANCE;
    }
    ExtProcStream stream = new ExtProcStream(runtime.get(), call, md, live, faults);
    live.add(stream);
    call.setOnCancelHandler(stream::onCancel);
    return stream;
  }

  /** The streams' counts, for the stream metrics. */
  public io.sluice.observability.StreamTally tally() {
    return live;
  }

  /** Streams still open (for graceful shutdown). */
  public int liveStreams() {
    return live.size();
  }

  /** After the grace period: release every remaining permit and end the streams non-OK. */
  public void shutdownStreams() {
    for (ExtProcStream s : live.snapshot()) {
      s.shutdown();
    }
  }

  private enum NoopObserver implements StreamObserver<Inbound> {
    INSTANCE;

    @Override
    public void onNext(Inbound value) {}

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }
}
