package io.sluice.routing;

import java.util.List;

/**
 * What an adapter can look up for one request, from the places Envoy sends: gRPC initial metadata,
 * request headers, forwarded dynamic metadata and request attributes. Implementations return null
 * when absent. Only the sources a config declares are ever read.
 */
public interface SignalSource {
  String metadata(String key);

  String header(String name);

  String dynamicMetadata(String namespace, List<String> path);

  String attribute(String expression);

  /** The request path ({@code :path}) without the query string. */
  String path();
}
