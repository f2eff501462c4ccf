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

  /**
   * {@link #metadata(String)} of {@code key}, which is the {@code slot}th of {@link
   * RequestResolver#metadataNames()} (in its order): an adapter that holds those keys by slot
   * answers without looking the key up.
   */
  default @Nullable String metadata(int slot, String key) {
    return metadata(key);
  }

  /**
   * {@link #header(String)} of {@code name}, which is the {@code slot}th of {@link
   * RequestResolver#headerNames()} (in its order): an adapter that indexed the request's headers by
   * those names answers without looking the name up.
   */
  default @Nullable String header(int slot, String name) {
    return header(name);
  }

  @Nullable String dynamicMetadata(String namespace, List<String> path);

  @Nullable String attribute(String expression);

  /** The request path ({@code :path}) without the query string; null when absent. */
  @Nullable String path();
}
