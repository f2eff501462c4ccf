package io.sluice.feature.intake;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import org.jspecify.annotations.Nullable;

/**
 * An upstream answer's body read up to a bound: past it, the rest is not read (the subscription is
 * cancelled) and the body is null, so that an oversized result is told apart, never truncated.
 */
final class BoundedBody implements HttpResponse.BodySubscriber<byte @Nullable []> {
  private final int max;
  private final CompletableFuture<byte @Nullable []> result = new CompletableFuture<>();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream(1024);
  private Flow.@Nullable Subscription subscription;
  private boolean over;

  BoundedBody(int max) {
    this.max = max;
  }

  static HttpResponse.BodyHandler<byte @Nullable []> handler(int max) {
    return info -> new BoundedBody(max);
  }

  @Override
  public CompletionStage<byte @Nullable []> getBody() {
    return result;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    s.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(List<ByteBuffer> items) {
    if (over) {
      return;
    }
    for (ByteBuffer b : items) {
      if ((long) out.size() + b.remaining() > max) {
        over = true;
        Flow.Subscription s = subscription;
        if (s != null) {
          s.cancel();
        }
        result.complete(null);
        return;
      }
      byte[] chunk = new byte[b.remaining()];
      b.get(chunk);
      out.write(chunk, 0, chunk.length);
    }
  }

  @Override
  public void onError(Throwable t) {
    if (!over) {
      result.completeExceptionally(t);
    }
  }

  @Override
  public void onComplete() {
    if (!over) {
      result.complete(out.toByteArray());
    }
  }
}
