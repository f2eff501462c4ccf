package io.sluice.extproc;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;

/**
 * Captures the stream's gRPC initial metadata (Envoy's {@code grpc_service.initial_metadata} merged
 * with per-route {@code ExtProcPerRoute.overrides.grpc_initial_metadata}) into the call's {@link
 * Context}: HTTP clients cannot set these, so they are trusted.
 */
public final class InitialMetadata implements ServerInterceptor {
  static final Context.Key<Metadata> KEY = Context.key("sluice-initial-metadata");

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    return Contexts.interceptCall(Context.current().withValue(KEY, headers), call, headers, next);
  }

  /** Keys come from the config (a bounded set): built and validated once, not per request. */
  private static final java.util.concurrent.ConcurrentMap<String, Metadata.Key<String>> KEYS =
      new java.util.concurrent.ConcurrentHashMap<>();

  static String get(Metadata md, String key) {
    if (md == null || key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
      return null;
    }
    Metadata.Key<String> k = KEYS.get(key);
    if (k == null) {
      k = KEYS.computeIfAbsent(key, n -> Metadata.Key.of(n, Metadata.ASCII_STRING_MARSHALLER));
    }
    return md.get(k);
  }
}
