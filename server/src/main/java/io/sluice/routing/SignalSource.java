package io.sluice.routing;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What an adapter can look up for one request, from the places Envoy sends: gRPC initial metadata,
 * request headers, forwarded dynamic metadata and request attributes. Implementations return null
 * when absent. Only the sources a config declares are ever read.
 */
public interface SignalSource {
  @Nullable String metadata(String key);

  @Nullable String header(String name);

  @Nullable String dynamicMetadata(String namespace, List<String> path);

  @Nullable String attribute(String expression);

  /** The request path ({@code :path}) without the query string; null when absent. */
  @Nullable String path();
}
