package io.sluice.emulator;

import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.grpc.SynchronizationContext;
import io.grpc.SynchronizationContext.ScheduledHandle;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.upstream.HttpHeaders;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Envoy's per-direction {@code ProcessorState} of one exchange: callback state, message timer,
 * override flag, the streamed chunks awaiting an answer, and the direction's header and body rules.
 * Runs in the exchange's {@link SynchronizationContext} like everything else of the exchange.
 */
final class ProcessorState {

  /** Envoy's {@code ProcessorState::CallbackState} (partial modes not emulated). */
  enum CallbackState {
    IDLE,
    HEADERS,
    BUFFERED_BODY,
    STREAMED_BODY,
    TRAILERS
  }

  record Chunk(byte[] data, boolean endOfStream) {}

  final boolean request;
  CallbackState state = CallbackState.IDLE;
  @Nullable ScheduledHandle timer;
  boolean overrideAccepted;
  boolean attributesSent;
  final ArrayDeque<Chunk> chunkQueue = new ArrayDeque<>();

  private final FilterConfig config;
  private final Stats stats;
  private final SynchronizationContext sync;
  private final ScheduledExecutorService scheduler;
  private final Runnable onMessageTimeout;

  ProcessorState(
      boolean request,
      FilterConfig config,
      Stats stats,
      SynchronizationContext sync,
      ScheduledExecutorService scheduler,
      Runnable onMessageTimeout) {
    this.request = request;
    this.config = config;
    this.stats = stats;
    this.sync = sync;
    this.scheduler = scheduler;
    this.onMessageTimeout = onMessageTimeout;
  }

  /** {@code onStartProcessorCall}. */
  void startCall(CallbackState next) {
    state = next;
    armTimer(config.messageTimeout().toNanos());
    overrideAccepted = false;
  }

  /** {@code onFinishProcessorCall}: timer off, next state, override flag cleared. */
  void finishCall(CallbackState next) {
    stopTimer();
    state = next;
    overrideAccepted = false;
  }

  /** {@code restartMessageTimer}. */
  boolean restartTimer(long millis) {
    if (timer != null && timer.isPending() && !overrideAccepted) {
      armTimer(TimeUnit.MILLISECONDS.toNanos(millis));
      overrideAccepted = true;
      return true;
    }
    return false;
  }

  private void armTimer(long nanos) {
    stopTimer();
    timer = sync.schedule(onMessageTimeout, nanos, TimeUnit.NANOSECONDS, scheduler);
  }

  void stopTimer() {
    if (timer != null) {
      timer.cancel();
      timer = null;
    }
  }

  boolean inBodyState() {
    return state == CallbackState.BUFFERED_BODY || state == CallbackState.STREAMED_BODY;
  }

  Optional<String> mutateHeaders(CommonResponse common, HttpHeaders headers) {
    if (!common.hasHeaderMutation()) {
      return Optional.empty();
    }
    return HeaderMutations.apply(
        common.getHeaderMutation(),
        headers,
        config.mutationRules(),
        stats,
        stripsContentLength(),
        common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE);
  }

  /** A {@code TrailersResponse}'s mutation of {@code trailers}, under the same rules. */
  Optional<String> mutateTrailers(
      io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation mutation, HttpHeaders trailers) {
    return HeaderMutations.apply(mutation, trailers, config.mutationRules(), stats, false, false);
  }

  /** Envoy removes content-length in STREAMED, and in BUFFERED when headers are skipped. */
  boolean stripsContentLength() {
    BodyMode body =
        request
            ? config.processingMode().requestBodyMode()
            : config.processingMode().responseBodyMode();
    HeaderMode header =
        request
            ? config.processingMode().requestHeaderMode()
            : config.processingMode().responseHeaderMode();
    return body == BodyMode.STREAMED || (body == BodyMode.BUFFERED && header == HeaderMode.SKIP);
  }

  Optional<String> validateContentLength(HttpHeaders headers, byte[] body) {
    if (stripsContentLength()) {
      return Optional.empty();
    }
    Optional<String> cl = headers.first("content-length");
    if (cl.isPresent() && !cl.get().equals(Integer.toString(body.length))) {
      return Optional.of("mismatch between content length and the length of the mutated body");
    }
    return Optional.empty();
  }
}
