package io.sluice.e2e;

import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The simulated OpenAI-style upstream ({@link SimulatedLlmUpstream}, instant) with two ways to keep
 * a request in flight:
 *
 * <ul>
 *   <li>{@link Mode#HOLD_RESPONSE}: the response (headers and body) waits until {@link
 *       #releaseHeld()};
 *   <li>{@link Mode#HOLD_STREAM}: 200 {@code text/event-stream} at once with one SSE chunk, the
 *       rest (final chunk, usage chunk, {@code [DONE]}) waits until {@link #finishStreams()}.
 * </ul>
 */
final class ControlledUpstream implements Upstream, AutoCloseable {
  enum Mode {
    SIMULATED,
    HOLD_RESPONSE,
    HOLD_STREAM
  }

  static final String FIRST_SSE_CHUNK =
      "data: {\"id\":\"held-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
          + "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
  static final String LAST_SSE_CHUNKS =
      "data: {\"id\":\"held-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
          + "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n"
          + "data: {\"id\":\"held-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
          + "\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,"
          + "\"total_tokens\":14}}\n\n"
          + "data: [DONE]\n\n";

  private volatile SimulatedLlmUpstream llm =
      SimulatedLlmUpstream.create(SimulatedLlmUpstream.Settings.instant());
  private volatile Mode mode = Mode.SIMULATED;
  private final List<UpstreamRequest> received = new ArrayList<>();
  private final List<Runnable> heldResponses = new ArrayList<>();
  private final List<HeldStream> heldStreams = new ArrayList<>();

  /**
   * The simulated model counts {@code bytesPerToken} request bytes per prompt token in the usage it
   * reports (instant answers otherwise; default 4).
   */
  ControlledUpstream promptBytesPerToken(int bytesPerToken) {
    SimulatedLlmUpstream.Settings i = SimulatedLlmUpstream.Settings.instant();
    llm =
        SimulatedLlmUpstream.create(
            new SimulatedLlmUpstream.Settings(
                i.batchSlots(),
                i.prefillPerInputToken(),
                i.decodePerOutputToken(),
                i.defaultOutputTokens(),
                i.maxOutputTokens(),
                bytesPerToken));
    return this;
  }

  ControlledUpstream mode(Mode mode) {
    this.mode = mode;
    return this;
  }

  @Override
  public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
    synchronized (this) {
      received.add(request);
    }
    switch (mode) {
      case HOLD_RESPONSE -> {
        CompletableFuture<UpstreamResponse> later = new CompletableFuture<>();
        synchronized (this) {
          heldResponses.add(
              () ->
                  llm.send(request)
                      .whenComplete(
                          (r, e) -> {
                            if (e != null) {
                              later.completeExceptionally(e);
                            } else {
                              later.complete(r);
                            }
                          }));
        }
        return later;
      }
      case HOLD_STREAM -> {
        HeldStream body = new HeldStream();
        synchronized (this) {
          heldStreams.add(body);
        }
        return CompletableFuture.completedFuture(
            new UpstreamResponse(
                200,
                HttpHeaders.of("content-type", "text/event-stream", "cache-control", "no-cache"),
                body));
      }
      default -> {
        return llm.send(request);
      }
    }
  }

  /** Requests that reached the upstream so far. */
  synchronized List<UpstreamRequest> received() {
    return List.copyOf(received);
  }

  /** Lets every held response go (HOLD_RESPONSE). */
  void releaseHeld() {
    List<Runnable> go;
    synchronized (this) {
      go = List.copyOf(heldResponses);
      heldResponses.clear();
    }
    go.forEach(Runnable::run);
  }

  /** Ends every held SSE stream (HOLD_STREAM) with its final, usage and [DONE] chunks. */
  void finishStreams() {
    List<HeldStream> go;
    synchronized (this) {
      go = List.copyOf(heldStreams);
      heldStreams.clear();
    }
    go.forEach(HeldStream::finish);
  }

  /** Held streams whose downstream went away (the emulator stopped delivery). */
  synchronized long cancelledStreams() {
    return heldStreams.stream().filter(s -> s.cancelled).count();
  }

  @Override
  public void close() {
    llm.close();
  }

  private static final class HeldStream implements ResponseBody {
    private Sink sink;
    private volatile boolean cancelled;

    @Override
    public synchronized Runnable subscribe(Sink sink) {
      this.sink = sink;
      sink.onData(FIRST_SSE_CHUNK.getBytes(StandardCharsets.UTF_8), false);
      return () -> cancelled = true;
    }

    synchronized void finish() {
      if (sink != null && !cancelled) {
        sink.onData(LAST_SSE_CHUNKS.getBytes(StandardCharsets.UTF_8), true);
      }
    }
  }
}
