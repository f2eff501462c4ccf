package io.sluice.emulator;

import com.google.protobuf.Struct;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ClientCall;
import io.grpc.Metadata.Key;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.grpc.SynchronizationContext.ScheduledHandle;
import io.sluice.emulator.ProcessorState.CallbackState;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The ext_proc gRPC stream of one exchange: opened with the first message, what each message
 * carries besides its payload (attributes, metadata context, protocol config), and how Envoy closes
 * it. Messages and the close are handed to the exchange in its {@link SynchronizationContext}.
 */
final class ProcessorStream {
  private static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  private final EnvoyExtProcEmulator emulator;
  private final FilterConfig config;
  private final Stats stats;
  private final HttpRequest request;
  private final SynchronizationContext sync;
  private final ScheduledExecutorService scheduler;
  private final ProcessorState decoding;
  private final ProcessorState encoding;
  private final Consumer<ProcessingResponse> onResponse;
  private final Consumer<Status> onGrpcClose;

  private @Nullable ClientCall<ProcessingRequest, ProcessingResponse> call;
  private boolean closedByEnvoy;
  private boolean callDone;
  private @Nullable ScheduledHandle remoteCloseTimer;
  private boolean firstMessageSent;
  private final Map<String, AiFilters.Published> published = new LinkedHashMap<>();
  // Envoy's tracing: the context its gRPC client injects into the stream's initial metadata
  private @Nullable String traceparent;

  ProcessorStream(
      EnvoyExtProcEmulator emulator,
      HttpRequest request,
      SynchronizationContext sync,
      ProcessorState decoding,
      ProcessorState encoding,
      Consumer<ProcessingResponse> onResponse,
      Consumer<Status> onGrpcClose) {
    this.emulator = emulator;
    this.config = emulator.config();
    this.stats = emulator.stats();
    this.scheduler = emulator.scheduler();
    this.request = request;
    this.sync = sync;
    this.decoding = decoding;
    this.encoding = encoding;
    this.onResponse = onResponse;
    this.onGrpcClose = onGrpcClose;
  }

  /** True once Envoy closed or dropped the stream (or treats it as gone). */
  boolean closedByEnvoy() {
    return closedByEnvoy;
  }

  /** The stream is done with from the filter's side; nothing is sent on it any more. */
  void markClosedByEnvoy() {
    closedByEnvoy = true;
  }

  /** The ext_proc span's trace context, sent as {@code traceparent} when the stream opens. */
  void traceparent(String value) {
    this.traceparent = value;
  }

  /** Dynamic metadata an AI filter put on the stream ({@link AiFilters}), by namespace. */
  void publish(AiFilters.Published p) {
    published.put(p.namespace(), p);
  }

  void send(ProcessorState direction, ProcessingRequest.Builder msg, CallbackState next) {
    if (call == null) {
      open();
    }
    if (!firstMessageSent && config.aiFilters()) { // the request-info filter ran before ext_proc
      AiFilters.requestInfo(request.body()).ifPresent(this::publish);
    }
    Map<String, Object> attributes = new LinkedHashMap<>();
    if (direction.request) {
      attributes.putAll(config.requestAttributes());
      attributes.putAll(request.requestAttributes());
    } else {
      attributes.putAll(config.responseAttributes());
    }
    if (!direction.attributesSent && !attributes.isEmpty()) {
      msg.putAttributes(ATTRIBUTES_KEY, ExtProcMessages.toStruct(attributes));
    }
    direction.attributesSent = true;
    Metadata.Builder context = Metadata.newBuilder();
    for (Map.Entry<String, Struct> e : request.streamMetadata().entrySet()) {
      if (config.metadataOptions().forwardingNamespaces().contains(e.getKey())) {
        context.putFilterMetadata(e.getKey(), e.getValue());
      }
    }
    for (AiFilters.Published p : published.values()) {
      if (config.metadataOptions().forwardingNamespaces().contains(p.namespace())) {
        context.putFilterMetadata(p.namespace(), p.untyped());
      }
      if (config.metadataOptions().typedForwardingNamespaces().contains(p.namespace())) {
        context.putTypedFilterMetadata(p.namespace(), p.typed());
      }
    }
    msg.setMetadataContext(context);
    if (!firstMessageSent && config.sendProtocolConfig()) {
      msg.setProtocolConfig(
          ProtocolConfiguration.newBuilder()
              .setRequestBodyMode(
                  ExtProcMessages.toProto(config.processingMode().requestBodyMode()))
              .setResponseBodyMode(
                  ExtProcMessages.toProto(config.processingMode().responseBodyMode())));
    }
    firstMessageSent = true;
    direction.startCall(next);
    if (callDone) {
      return; // the stream already failed; its close is being handled
    }
    Objects.requireNonNull(call, "call").sendMessage(msg.build());
    stats.streamMsgsSent.increment();
  }

  private void open() {
    io.grpc.Metadata headers = new io.grpc.Metadata();
    Map<String, String> merged = new LinkedHashMap<>(config.grpcInitialMetadata());
    merged.putAll(request.routeGrpcInitialMetadata());
    if (traceparent != null) { // injected by the tracer after the configured metadata
      merged.put("traceparent", traceparent);
    }
    merged.forEach((k, v) -> headers.put(Key.of(k, io.grpc.Metadata.ASCII_STRING_MARSHALLER), v));
    call = emulator.newCall();
    stats.streamsStarted.increment();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ProcessingResponse message) {
            sync.execute(() -> onResponse.accept(message));
          }

          @Override
          public void onClose(Status status, io.grpc.Metadata trailers) {
            sync.execute(() -> onGrpcClose.accept(status));
          }
        },
        headers);
    call.request(Integer.MAX_VALUE);
  }

  /**
   * Envoy's {@code closeStream} / {@code closeStreamMaybeGraceful}: reset (the server sees
   * CANCELLED), or half-close and reset after the remote close timeout when graceful.
   */
  void close(boolean maybeGraceful) {
    if (call == null || closedByEnvoy) {
      return;
    }
    closedByEnvoy = true;
    decoding.stopTimer();
    encoding.stopTimer();
    if (callDone) {
      return;
    }
    stats.streamsClosed.increment();
    if (maybeGraceful && config.streamClose().graceful()) {
      call.halfClose();
      remoteCloseTimer =
          sync.schedule(
              () -> {
                ClientCall<ProcessingRequest, ProcessingResponse> c = call;
                if (!callDone && c != null) {
                  c.cancel("ext_proc remote close timeout", null);
                }
              },
              config.streamClose().remoteTimeout().toNanos(),
              TimeUnit.NANOSECONDS,
              scheduler);
    } else {
      call.cancel("ext_proc stream reset by Envoy", null);
    }
  }

  /**
   * The gRPC call ended: no more messages. True if Envoy had closed or dropped it already (then no
   * callbacks reach the filter).
   */
  boolean onCallClosed() {
    boolean ours = closedByEnvoy;
    callDone = true;
    if (remoteCloseTimer != null) {
      remoteCloseTimer.cancel();
    }
    return ours;
  }
}
