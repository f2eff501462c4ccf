package io.sluice.observability;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

/**
 * The request models as a metric or span attribute, bounded whatever clients send: the first
 * {@value #MAX} seen (at most 128 characters each) as themselves, any other as {@value #OTHER}. One
 * per {@link OtelHistograms} (so the bound holds across the reloads that keep its cells), or per
 * {@link OtelRecorder} when no metrics are exported.
 */
final class ModelNames {
  static final int MAX = 64;
  static final String OTHER = "_other";

  private final ConcurrentMap<String, String> seen = new ConcurrentHashMap<>();

  /** The attribute value of {@code model}, or null when the request named none. */
  @Nullable String of(@Nullable String model) {
    if (model == null) {
      return null;
    }
    String known = seen.get(model);
    if (known != null) {
      return known;
    }
    if (seen.size() >= MAX || model.length() > 128) {
      return OTHER;
    }
    String prev = seen.putIfAbsent(model, model);
    return prev != null ? prev : model;
  }
}
