package io.sluice.routing;

import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** A request's signals ({@link SignalRequest}) and every header name looked up in them. */
final class CountingSource implements SignalSource {
  final SignalRequest request = new SignalRequest();
  final List<String> asked = new ArrayList<>();

  @Override
  public @Nullable String metadata(String key) {
    return request.metadata(key);
  }

  @Override
  public @Nullable String header(String name) {
    asked.add(name);
    return request.header(name);
  }

  @Override
  public @Nullable String dynamicMetadata(String namespace, List<String> path) {
    return null;
  }

  @Override
  public @Nullable String attribute(String expression) {
    return null;
  }

  @Override
  public @Nullable String path() {
    return request.path;
  }
}
