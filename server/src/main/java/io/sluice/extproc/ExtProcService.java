package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * {@code envoy.service.ext_proc.v3.ExternalProcessor/Process}: one bidi stream per HTTP request.
 * Handlers never block; they run on the transport threads.
 *
 * <p>Bound with the generated method's schema (so reflection still shows the real service), {@link
 * InboundMarshaller} for requests (request_headers read from the wire) and {@link
 * Answer#MARSHALLER} for answers, which are written as pre-encoded {@code ProcessingResponse}
 * bytes; {@link ExtProcCall} runs each call. The stream's gRPC initial metadata (Envoy's {@code
 * grpc_service.initial_metadata} merged with per-route {@code ExtProcPerRoute} overrides; HTTP
 * clients cannot set it, so it is trusted) is handed to the stream when the call starts.
 */
public final class ExtProcService {
  static final MethodDescriptor<Inbound, Answer> PROCESS =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(
              InboundMarshaller.INSTANCE, Answer.MARSHALLER)
          .build();

  private final Supplier<AdmissionRuntime> runtime;
  private final BooleanSupplier draining;
  private final LiveStreams<ExtProcStream> live = new LiveStreams<>();
  private final StreamFaults faults;
  private final io.sluice.core.session.SessionSteps steps;
  private final io.sluice.config.SluiceConfig.Streams limits;
  private final java.util.concurrent.atomic.AtomicBoolean sweeping =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** The service as served: no faults injected. */
  public static ExtProcService create(
      Supplier<AdmissionRuntime> runtime, BooleanSupplier draining) {
    return new ExtProcService(runtime, draining, StreamFaults.NONE);
  }

  /** With a fault injector (tests; {@link StreamFaults#NONE} as served). */
  ExtProcService(
      Supplier<AdmissionRuntime> runtime, BooleanSupplier draining, StreamFaults faults) {
    this.runtime = runtime;
    this.draining = draining;
    this.faults = faults;
    this.steps = StreamFaults.sessionSteps(faults);
    // process settings: read once (a reload does not change them, like the ports)
    this.limits = runtime.get().config().server().streams();
  }

  /** The service to add to the gRPC server. */
  public ServerServiceDefinition definition() {
    // the stub's bidi contract, with the call's metadata handed over and no stack trace per reset
    ServerCallHandler<Inbound, Answer> handler = ExtProcCall.handler(this::open);
    ServiceDescriptor service =
        ServiceDescriptor.newBuilder(ExternalProcessorGrpc.SERVICE_NAME)
            .setSchemaDescriptor(ExternalProcessorGrpc.getServiceDescriptor().getSchemaDescriptor())
            .addMethod(PROCESS)
            .build();
    return ServerServiceDefinition.builder(service).addMethod(PROCESS, handler).build();
  }

  /** One ext_proc stream on {@code call}, whose gRPC initial metadata is {@code md}. */
  StreamObserver<Inbound> open(ServerCallStreamObserver<Answer> call, Metadata md) {
    AdmissionRuntime rt = runtime.get();
    if (draining.getAsBoolean()) {
      // Non-OK so Envoy applies failure_mode_allow; never OK (that would admit the request).
      rt.metrics().streamRefused("draining");
      call.onError(
          Status.UNAVAILABLE.withDescription("sluice is shutting down").asRuntimeException());
      return NoopObserver.INSTANCE;
    }
    ExtProcStream stream = new ExtProcStream(rt, call, md, live, faults, steps);
    if (!live.tryAdd(stream, limits.maxStreams()) && !evictIdleFor(stream, rt)) {
      rt.metrics().streamRefused("max_streams");
      call.onError(
          Status.RESOURCE_EXHAUSTED
              .withDescription(
                  "sluice: "
                      + limits.maxStreams()
                      + " ext_proc streams are open (server.grpc.maxStreams)")
              .asRuntimeException());
      return NoopObserver.INSTANCE;
    }
    call.setOnCancelHandler(stream); // its run(): nothing made per stream
    if (!sweeping.get()) {
      startSweeping();
    }
    return stream;
  }

  /**
   * A stream that has sent no message for {@link #EVICTABLE_AFTER_NANOS} gives its place to a new
   * one at {@code maxStreams}: the oldest such stream is ended UNAVAILABLE and {@code stream} takes
   * its place. Streams that sent their first message are never ended for room. An idle flood then
   * evicts itself: a stream of Envoy's sends its request headers as it opens, so it is the newest
   * of the idle streams for that moment and would need every older idle stream evicted first.
   */
  private boolean evictIdleFor(ExtProcStream stream, AdmissionRuntime rt) {
    ExtProcStream victim = live.claimOldestIdle(rt.ticker().nanos() - EVICTABLE_AFTER_NANOS);
    if (victim == null) {
      return false;
    }
    rt.metrics().streamRefused("idle_evicted");
    victim.evict(
        Status.UNAVAILABLE.withDescription(
            "sluice: evicted, no first message while "
                + limits.maxStreams()
                + " ext_proc streams are open (server.grpc.maxStreams)"));
    // the victim left at once unless busy; a stream still over the limit then is refused
    return live.tryAdd(stream, limits.maxStreams());
  }

  /** How long a stream may stay silent before it can be evicted for room (well above an RTT). */
  static final long EVICTABLE_AFTER_NANOS = 100_000_000L;

  /**
   * The silence bounds (first message, before a decision, after admission) are checked by one
   * periodic sweep over the open streams on one shared thread, not by a timer per stream: the happy
   * path arms and cancels nothing, it only notes when each message arrived.
   */
  private void startSweeping() {
    if (!sweeping.compareAndSet(false, true)) {
      return;
    }
    long period = sweepPeriodNanos(limits);
    if (period > 0) { // else every bound is off: never sweep (sweeping stays set)
      scheduleSweep(period);
    }
  }

  /** A quarter of the shortest bound, within 100 ms .. 1 s; 0 when every bound is off. */
  static long sweepPeriodNanos(io.sluice.config.SluiceConfig.Streams l) {
    long min = Long.MAX_VALUE;
    for (java.time.Duration d :
        new java.time.Duration[] {
          l.firstMessageTimeout(), l.idleTimeout(), l.admittedIdleTimeout()
        }) {
      if (!d.isZero()) {
        min = Math.min(min, d.toNanos());
      }
    }
    if (min == Long.MAX_VALUE) {
      return 0;
    }
    return Math.max(100_000_000L, Math.min(1_000_000_000L, min / 4));
  }

  /**
   * The sweeps' thread, shared by the process's services: it sleeps until the next sweep (at most
   * ten a second while streams are open, none while none are). The sweeps used to run on the
   * runtime's {@link QueueTimer}, whose wheel, once started, ticks a hundred times a second for
   * good (about 20 ms of CPU a second on the 2 shared cores of the floor); it now starts only when
   * a request is held.
   */
  private static final ScheduledExecutorService SWEEPER =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "sluice-stream-sweep");
            t.setDaemon(true);
            return t;
          });

  private void scheduleSweep(long period) {
    var unused =
        SWEEPER.schedule(
            () -> {
              try {
                sweepIdle();
              } finally {
                if (live.count() > 0) {
                  scheduleSweep(period);
                } else {
                  // Nothing open: stop until the next stream (open() restarts the sweep). The
                  // re-check closes the race with an open() that saw the sweep still running.
                  sweeping.set(false);
                  if (live.count() > 0 && sweeping.compareAndSet(false, true)) {
                    scheduleSweep(period);
                  }
                }
              }
            },
            period,
            TimeUnit.NANOSECONDS);
  }

  /** Ends the streams that stayed silent too long; returns how many were found (tests). */
  int sweepIdle() {
    AdmissionRuntime rt = runtime.get();
    long now = rt.ticker().nanos();
    int expired = 0;
    for (ExtProcStream s : live.snapshot()) {
      if (s.checkIdle(now, limits)) {
        expired++;
      }
    }
    return expired;
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
