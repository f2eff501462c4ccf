package io.sluice.routing;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A request as Envoy would send it: headers from the client, metadata from Envoy; path {@code
 * /v1/chat/completions} unless set. Shared by the routing and config tests.
 */
public final class SignalRequest implements SignalSource {
  public final Map<String, String> headers = new HashMap<>();
  public final Map<String, String> metadata = new HashMap<>();
  public String path = "/v1/chat/completions";

  public SignalRequest header(String k, String v) {
    headers.put(k, v);
    return this;
  }

  public SignalRequest metadata(String k, String v) {
    metadata.put(k, v);
    return this;
  }

  @Override
  public String metadata(String key) {
    return metadata.get(key);
  }

  @Override
  public String header(String name) {
    return headers.get(name);
  }

  @Override
  public String dynamicMetadata(String namespace, List<String> path) {
    return null;
  }

  @Override
  public String attribute(String expression) {
    return null;
  }

  @Override
  public String path() {
    return path;
  }
}
