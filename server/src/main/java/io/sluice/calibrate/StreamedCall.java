package io.sluice.calibrate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.util.Locale;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One request of a {@link StepRunner} step: its timings and what its stream said (the first {@code
 * data:} chunk with content, {@code usage}, an error event; or one JSON document when the endpoint
 * ignored {@code "stream"}). Lines arrive serially (Flow rules).
 */
final class StreamedCall implements Flow.Subscriber<String> {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_ERROR_TEXT = 300;

  final long start = System.nanoTime();

  /** Counted in the step's results (else it only keeps the concurrency up). */
  final boolean measured;

  volatile int status;
  volatile boolean eventStream;
  volatile long firstContent = -1;
  final AtomicInteger contentChunks = new AtomicInteger();
  volatile int usageOutput = -1;
  volatile int usagePrompt = -1;
  volatile boolean streamError;
  volatile Flow.@Nullable Subscription subscription;
  volatile @Nullable CompletableFuture<HttpResponse<Void>> future;
  final StringBuilder errorText = new StringBuilder();
  final StringBuilder plainBody = new StringBuilder();
  volatile boolean cancelled;

  /** ok, unfinished, or an error kind; set once, at the end. */
  volatile @Nullable String kind;

  volatile long endNanos;

  StreamedCall(boolean measured) {
    this.measured = measured;
  }

  void onHeaders(HttpResponse.ResponseInfo info) {
    status = info.statusCode();
    eventStream =
        info.headers()
            .firstValue("content-type")
            .map(v -> v.toLowerCase(Locale.ROOT).startsWith("text/event-stream"))
            .orElse(false);
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    if (cancelled) {
      s.cancel();
    } else {
      s.request(Long.MAX_VALUE);
    }
  }

  @Override
  public void onNext(String line) {
    if (status < 200 || status > 299) {
      if (errorText.length() < MAX_ERROR_TEXT) {
        errorText.append(line, 0, Math.min(line.length(), MAX_ERROR_TEXT - errorText.length()));
      }
      return;
    }
    if (line.startsWith("data:")) {
      String data = line.substring(5).trim();
      if (data.isEmpty() || data.equals("[DONE]")) {
        return;
      }
      event(data);
    } else if (!eventStream && plainBody.length() < (1 << 20)) {
      plainBody.append(line).append('\n');
    }
  }

  private void event(String data) {
    JsonNode n;
    try {
      n = JSON.readTree(data);
    } catch (IOException e) {
      return; // not JSON: not a chunk we can read
    }
    if (n.hasNonNull("error")) {
      streamError = true;
      return;
    }
    JsonNode choice = n.path("choices").path(0);
    String content = choice.path("delta").path("content").asText(choice.path("text").asText(""));
    if (!content.isEmpty()) {
      if (firstContent < 0) {
        firstContent = System.nanoTime();
      }
      contentChunks.incrementAndGet();
    }
    usage(n.path("usage"));
  }

  private void usage(JsonNode u) {
    if (u.path("completion_tokens").canConvertToInt()) {
      usageOutput = u.path("completion_tokens").asInt();
    }
    if (u.path("prompt_tokens").canConvertToInt()) {
      usagePrompt = u.path("prompt_tokens").asInt();
    }
  }

  @Override
  public void onError(Throwable t) {
    // reported through the response future
  }

  @Override
  public void onComplete() {
    if (!eventStream && plainBody.length() > 0) {
      // the endpoint ignored "stream": one JSON document; its first token is its end
      try {
        JsonNode n = JSON.readTree(plainBody.toString());
        JsonNode choice = n.path("choices").path(0);
        String content =
            choice.path("message").path("content").asText(choice.path("text").asText(""));
        if (!content.isEmpty()) {
          firstContent = System.nanoTime();
          contentChunks.set(1);
        }
        usage(n.path("usage"));
      } catch (IOException e) {
        streamError = true;
      }
    }
  }

  int outputTokens() {
    return usageOutput >= 0 ? usageOutput : contentChunks.get();
  }

  void cancel() {
    cancelled = true;
    Flow.Subscription s = subscription;
    if (s != null) {
      s.cancel();
    }
    CompletableFuture<HttpResponse<Void>> f = future;
    if (f != null) {
      f.cancel(true);
    }
  }

  /** Records the end; returns the kind. */
  String end(@Nullable Throwable ex) {
    endNanos = System.nanoTime();
    Throwable cause = ex;
    while ((cause instanceof CompletionException) && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cancelled || cause instanceof CancellationException) {
      kind = "unfinished";
    } else if (cause instanceof HttpTimeoutException) {
      kind = "timeout";
    } else if (cause != null) {
      kind = "io";
    } else if (status < 200 || status > 299) {
      kind = String.valueOf(status);
    } else if (streamError) {
      kind = "stream";
    } else {
      kind = "ok";
    }
    return kind();
  }

  String kind() {
    String k = kind;
    return k == null ? "unfinished" : k;
  }
}
