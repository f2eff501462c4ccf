package io.sluice.upstream;

import java.util.concurrent.CompletableFuture;

/**
 * The upstream service behind the emulated Envoy route. Implementations must not block: the
 * returned future completes when the response headers are available; the body arrives through
 * {@link UpstreamResponse#body()}.
 */
@FunctionalInterface
public interface Upstream {
  CompletableFuture<UpstreamResponse> send(UpstreamRequest request);
}
