package io.sluice.bench;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/** Closed loops of legitimate ext_proc streams and RLS calls; counts completions per second. */
final class LegitLoad {
  final List<ManagedChannel> chans;
  final int concurrency;
  final AtomicBoolean running = new AtomicBoolean(true);
  final LongAdder extprocOk = new LongAdder();
  final LongAdder rlsOk = new LongAdder();
  final LongAdder failed = new LongAdder();
  volatile long since = System.nanoTime();

  LegitLoad(List<ManagedChannel> chans, int concurrency) {
    this.chans = chans;
    this.concurrency = concurrency;
  }

  void start() {
    for (int i = 0; i < concurrency; i++) {
      extproc(chans.get(i % chans.size()));
      rls(chans.get((i + 1) % chans.size()), i);
    }
  }

  void reset() {
    extprocOk.reset();
    rlsOk.reset();
    failed.reset();
    since = System.nanoTime();
  }

  /** ext_proc and RLS completions per second since the last reset. */
  double[] rates() {
    double s = (System.nanoTime() - since) / 1e9;
    return new double[] {extprocOk.sum() / s, rlsOk.sum() / s};
  }

  void stop() {
    running.set(false);
  }

  private void extproc(ManagedChannel ch) {
    if (!running.get()) {
      return;
    }
    ClientCall<ProcessingRequest, ProcessingResponse> call =
        ch.newCall(
            ExternalProcessorGrpc.getProcessMethod(),
            CallOptions.DEFAULT.withDeadlineAfter(1, TimeUnit.SECONDS));
    AtomicBoolean answered = new AtomicBoolean();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ProcessingResponse message) {
            if (answered.compareAndSet(false, true)) {
              extprocOk.increment();
              call.cancel("done", null); // as Envoy resets the stream at the end of a request
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            if (!answered.get()) {
              failed.increment();
            }
            extproc(ch);
          }
        },
        new Metadata());
    call.request(1);
    try {
      // no half-close: like Envoy, the stream stays open until the answer (then it is reset)
      call.sendMessage(FloorMessages.request());
    } catch (IllegalStateException e) {
      // already answered and cancelled on another thread: nothing left to send
    }
  }

  private void rls(ManagedChannel ch, int i) {
    if (!running.get()) {
      return;
    }
    ClientCall<RateLimitRequest, RateLimitResponse> call =
        ch.newCall(
            RateLimitServiceGrpc.getShouldRateLimitMethod(),
            CallOptions.DEFAULT.withDeadlineAfter(1, TimeUnit.SECONDS));
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            if (status.isOk()) {
              rlsOk.increment();
            } else {
              failed.increment();
            }
            rls(ch, i);
          }
        },
        new Metadata());
    call.request(1);
    call.sendMessage(
        RateLimitRequest.newBuilder()
            .setDomain("flood")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .addEntries(
                        RateLimitDescriptor.Entry.newBuilder()
                            .setKey("user")
                            .setValue("legit" + i)))
            .build());
    call.halfClose();
  }
}
