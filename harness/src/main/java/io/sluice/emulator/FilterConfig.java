package io.sluice.emulator;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The emulated {@code envoy.filters.http.ext_proc} filter configuration (Envoy 1.34–1.38 field
 * names in comments). Build with {@link #builder()}; {@link #defaults()} equals Envoy's defaults
 * (headers SEND, bodies NONE, message_timeout 200 ms, overrides disabled, fail-closed).
 *
 * @param processingMode {@code processing_mode}
 * @param messageTimeout {@code message_timeout} (0..3600 s)
 * @param maxMessageTimeout {@code max_message_timeout} (0 disables override_message_timeout)
 * @param failureModeAllow {@code failure_mode_allow}
 * @param metadataOptions {@code metadata_options}
 * @param aiFilters Envoy's AI filters sit in the chain ({@link AiFilters}): the request-info
 *     filter's record is on the stream before the first message, the AI protocol manager's token
 *     usage from a 2xx response's clean end on
 * @param requestAttributes {@code request_attributes}: expression text to the value the test
 *     pretends CEL produced (Boolean, Number or anything printed as a string); per-request values
 *     in {@link HttpRequest} win
 * @param responseAttributes {@code response_attributes}, same convention
 * @param grpcInitialMetadata {@code grpc_service.initial_metadata}
 * @param grpcAuthority the {@code :authority} of the gRPC stream (cluster name or {@code
 *     envoy_grpc.authority})
 * @param sendProtocolConfig send {@code protocol_config} on the first message (Envoy 1.34+)
 * @param streamClose when and how Envoy closes the gRPC stream (runtime flags)
 * @param mutationRules {@code mutation_rules}: which header changes the server may make
 * @param routeCacheAction {@code route_cache_action} (≈1.31): when a request-path response clears
 *     the route cache
 * @param disableClearRouteCache {@code disable_clear_route_cache} (≈1.27), the older spelling of
 *     {@link RouteCacheAction#RETAIN}; setting it together with a non-DEFAULT {@code
 *     routeCacheAction} is refused, as Envoy refuses the config
 * @param tracing the connection manager's {@code tracing} (OpenTelemetry tracer, every request
 *     sampled): the ext_proc stream carries its span's {@code traceparent} in its initial metadata
 *     ({@link EnvoyTracing}); null when tracing is off (Envoy's default)
 */
public record FilterConfig(
    ProcessingMode processingMode,
    Duration messageTimeout,
    Duration maxMessageTimeout,
    boolean failureModeAllow,
    MetadataOptions metadataOptions,
    boolean aiFilters,
    Map<String, Object> requestAttributes,
    Map<String, Object> responseAttributes,
    Map<String, String> grpcInitialMetadata,
    String grpcAuthority,
    boolean sendProtocolConfig,
    StreamClose streamClose,
    MutationRules mutationRules,
    RouteCacheAction routeCacheAction,
    boolean disableClearRouteCache,
    @Nullable EnvoyTracing tracing) {

  /**
   * {@code processing_mode}: which parts of the request and response go to the processor.
   *
   * @param requestHeaderMode {@code request_header_mode}
   * @param responseHeaderMode {@code response_header_mode}
   * @param requestBodyMode {@code request_body_mode}
   * @param responseBodyMode {@code response_body_mode}
   * @param responseTrailerMode {@code response_trailer_mode} (default SKIP: for trailers Envoy's
   *     DEFAULT means SKIP); with SEND an upstream response's trailers go to the processor as
   *     {@code response_trailers} and its {@code header_mutation} applies to them
   */
  public record ProcessingMode(
      HeaderMode requestHeaderMode,
      HeaderMode responseHeaderMode,
      BodyMode requestBodyMode,
      BodyMode responseBodyMode,
      HeaderMode responseTrailerMode) {
    /** Envoy's defaults: headers SEND, bodies NONE, trailers SKIP. */
    public static ProcessingMode defaults() {
      return new ProcessingMode(
          HeaderMode.SEND, HeaderMode.SEND, BodyMode.NONE, BodyMode.NONE, HeaderMode.SKIP);
    }

    public ProcessingMode withRequestHeaderMode(HeaderMode m) {
      return new ProcessingMode(
          m, responseHeaderMode, requestBodyMode, responseBodyMode, responseTrailerMode);
    }

    public ProcessingMode withResponseHeaderMode(HeaderMode m) {
      return new ProcessingMode(
          requestHeaderMode, m, requestBodyMode, responseBodyMode, responseTrailerMode);
    }

    public ProcessingMode withRequestBodyMode(BodyMode m) {
      return new ProcessingMode(
          requestHeaderMode, responseHeaderMode, m, responseBodyMode, responseTrailerMode);
    }

    public ProcessingMode withResponseBodyMode(BodyMode m) {
      return new ProcessingMode(
          requestHeaderMode, responseHeaderMode, requestBodyMode, m, responseTrailerMode);
    }

    public ProcessingMode withResponseTrailerMode(HeaderMode m) {
      return new ProcessingMode(
          requestHeaderMode, responseHeaderMode, requestBodyMode, responseBodyMode, m);
    }
  }

  /**
   * {@code metadata_options}: the dynamic metadata namespaces the filter takes from the processor
   * and sends to it.
   *
   * @param receivingNamespaces {@code receiving_namespaces.untyped}
   * @param forwardingNamespaces {@code forwarding_namespaces.untyped}
   * @param typedForwardingNamespaces {@code forwarding_namespaces.typed}
   */
  public record MetadataOptions(
      Set<String> receivingNamespaces,
      Set<String> forwardingNamespaces,
      Set<String> typedForwardingNamespaces) {
    public MetadataOptions {
      receivingNamespaces = Set.copyOf(receivingNamespaces);
      forwardingNamespaces = Set.copyOf(forwardingNamespaces);
      typedForwardingNamespaces = Set.copyOf(typedForwardingNamespaces);
    }
  }

  /**
   * When and how Envoy closes the ext_proc gRPC stream (runtime flags, not filter fields).
   *
   * @param graceful runtime flag {@code envoy.reloadable_features.ext_proc_graceful_grpc_close}
   * @param remoteTimeout {@code envoy.filters.http.ext_proc.remote_close_timeout_milliseconds}
   * @param afterLastResponse Envoy 1.37 runtime guard {@code
   *     envoy.reloadable_features.ext_proc_stream_close_optimization}: close the stream as soon as
   *     no further message will be needed instead of at the end of the HTTP request (off by
   *     default, i.e. Envoy ≤ 1.36 behaviour)
   */
  public record StreamClose(boolean graceful, Duration remoteTimeout, boolean afterLastResponse) {
    public StreamClose {
      if (remoteTimeout.isNegative()) {
        throw new IllegalArgumentException(
            "remoteCloseTimeout: " + remoteTimeout + " (expected: >= 0)");
      }
    }

    /** Envoy's defaults: not graceful, 1 s, at the end of the HTTP request. */
    public static StreamClose defaults() {
      return new StreamClose(false, Duration.ofMillis(1000), false);
    }
  }

  /** {@code ProcessingMode.HeaderSendMode} (DEFAULT means SEND for headers). */
  public enum HeaderMode {
    SEND,
    SKIP
  }

  /**
   * {@code ProcessingMode.BodySendMode}. BUFFERED_PARTIAL and FULL_DUPLEX_STREAMED are not
   * emulated.
   */
  public enum BodyMode {
    NONE,
    STREAMED,
    BUFFERED
  }

  /**
   * {@code ExternalProcessor.RouteCacheAction}: what a request-path response does to the route
   * cache when it carries a {@code header_mutation} (Envoy {@code
   * DecodingProcessorState::clearRouteCache} in {@code processor_state.cc}).
   */
  public enum RouteCacheAction {
    /** cleared iff the response sets {@code clear_route_cache}. */
    DEFAULT,
    /** always cleared, whatever {@code clear_route_cache} says. */
    CLEAR,
    /**
     * never cleared ({@code clear_route_cache: true} counts {@code clear_route_cache_disabled}).
     */
    RETAIN
  }

  /**
   * The part of {@code envoy.config.common.mutation_rules.v3.HeaderMutationRules} the emulator
   * implements (Envoy {@code Checker::isAllowed} in {@code
   * source/extensions/filters/common/mutation_rules/mutation_rules.cc}); {@code disallow_all},
   * {@code disallow_system} and the allow/disallow expressions are not emulated (left unset).
   *
   * @param allowAllRouting {@code allow_all_routing}: {@code host}, {@code :authority}, {@code
   *     :method} and {@code :scheme} may be set
   * @param allowEnvoy {@code allow_envoy}: headers starting with {@code x-envoy} may be set and
   *     removed
   * @param disallowIsError {@code disallow_is_error}: a disallowed change fails the request (500)
   *     instead of being skipped; either way it counts in {@code rejected_header_mutations}
   */
  public record MutationRules(
      boolean allowAllRouting, boolean allowEnvoy, boolean disallowIsError) {
    /** Envoy's defaults (every field false). */
    public static MutationRules defaults() {
      return new MutationRules(false, false, false);
    }
  }

  private static final Duration MAX_TIMEOUT = Duration.ofSeconds(3600);

  public FilterConfig {
    requireRange("messageTimeout", messageTimeout);
    requireRange("maxMessageTimeout", maxMessageTimeout);
    if (grpcAuthority == null || grpcAuthority.isBlank()) {
      throw new IllegalArgumentException(
          "grpcAuthority: " + grpcAuthority + " (expected: non-blank)");
    }
    requestAttributes = Map.copyOf(requestAttributes);
    responseAttributes = Map.copyOf(responseAttributes);
    grpcInitialMetadata = Map.copyOf(grpcInitialMetadata);
    if (disableClearRouteCache && routeCacheAction != RouteCacheAction.DEFAULT) {
      // Envoy's config.cc verifyFilterConfig refuses this combination
      throw new IllegalArgumentException(
          "disableClearRouteCache and routeCacheAction "
              + routeCacheAction
              + " (expected: not both set to non-default)");
    }
  }

  /**
   * The action Envoy applies: {@code disable_clear_route_cache} is turned into {@link
   * RouteCacheAction#RETAIN} by the filter config's constructor ({@code ext_proc.cc}).
   */
  public RouteCacheAction effectiveRouteCacheAction() {
    return disableClearRouteCache ? RouteCacheAction.RETAIN : routeCacheAction;
  }

  private static void requireRange(String field, Duration value) {
    if (value.isNegative() || value.compareTo(MAX_TIMEOUT) > 0) {
      throw new IllegalArgumentException(field + ": " + value + " (expected: 0s..3600s)");
    }
  }

  public static FilterConfig defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.processingMode = processingMode;
    b.messageTimeout = messageTimeout;
    b.maxMessageTimeout = maxMessageTimeout;
    b.failureModeAllow = failureModeAllow;
    b.receivingNamespaces.addAll(metadataOptions.receivingNamespaces());
    b.forwardingNamespaces.addAll(metadataOptions.forwardingNamespaces());
    b.typedForwardingNamespaces.addAll(metadataOptions.typedForwardingNamespaces());
    b.aiFilters = aiFilters;
    b.requestAttributes.putAll(requestAttributes);
    b.responseAttributes.putAll(responseAttributes);
    b.grpcInitialMetadata.putAll(grpcInitialMetadata);
    b.grpcAuthority = grpcAuthority;
    b.sendProtocolConfig = sendProtocolConfig;
    b.streamClose = streamClose;
    b.mutationRules = mutationRules;
    b.routeCacheAction = routeCacheAction;
    b.disableClearRouteCache = disableClearRouteCache;
    b.tracing = tracing;
    return b;
  }

  /** Builder with Envoy's defaults. */
  public static final class Builder {
    private ProcessingMode processingMode = ProcessingMode.defaults();
    private Duration messageTimeout = Duration.ofMillis(200);
    private Duration maxMessageTimeout = Duration.ZERO;
    private boolean failureModeAllow;
    private final Set<String> receivingNamespaces = new LinkedHashSet<>();
    private final Set<String> forwardingNamespaces = new LinkedHashSet<>();
    private final Set<String> typedForwardingNamespaces = new LinkedHashSet<>();
    private boolean aiFilters;
    private final Map<String, Object> requestAttributes = new LinkedHashMap<>();
    private final Map<String, Object> responseAttributes = new LinkedHashMap<>();
    private final Map<String, String> grpcInitialMetadata = new LinkedHashMap<>();
    private String grpcAuthority = "ext_proc_cluster";
    private boolean sendProtocolConfig = true;
    private StreamClose streamClose = StreamClose.defaults();
    private MutationRules mutationRules = MutationRules.defaults();
    private RouteCacheAction routeCacheAction = RouteCacheAction.DEFAULT;
    private boolean disableClearRouteCache;
    private @Nullable EnvoyTracing tracing;

    private Builder() {}

    public Builder requestHeaderMode(HeaderMode mode) {
      this.processingMode = processingMode.withRequestHeaderMode(mode);
      return this;
    }

    public Builder responseHeaderMode(HeaderMode mode) {
      this.processingMode = processingMode.withResponseHeaderMode(mode);
      return this;
    }

    public Builder responseTrailerMode(HeaderMode mode) {
      this.processingMode = processingMode.withResponseTrailerMode(mode);
      return this;
    }

    public Builder requestBodyMode(BodyMode mode) {
      this.processingMode = processingMode.withRequestBodyMode(mode);
      return this;
    }

    public Builder responseBodyMode(BodyMode mode) {
      this.processingMode = processingMode.withResponseBodyMode(mode);
      return this;
    }

    public Builder messageTimeout(Duration timeout) {
      this.messageTimeout = timeout;
      return this;
    }

    public Builder maxMessageTimeout(Duration timeout) {
      this.maxMessageTimeout = timeout;
      return this;
    }

    public Builder failureModeAllow(boolean allow) {
      this.failureModeAllow = allow;
      return this;
    }

    public Builder receivingNamespaces(String... namespaces) {
      receivingNamespaces.addAll(java.util.List.of(namespaces));
      return this;
    }

    /** {@code metadata_options.forwarding_namespaces.typed}. */
    public Builder typedForwardingNamespaces(String... namespaces) {
      typedForwardingNamespaces.addAll(java.util.List.of(namespaces));
      return this;
    }

    /** Envoy's AI filters (request info, AI protocol manager) in the chain: {@link AiFilters}. */
    public Builder aiFilters(boolean on) {
      this.aiFilters = on;
      return this;
    }

    public Builder forwardingNamespaces(String... namespaces) {
      forwardingNamespaces.addAll(java.util.List.of(namespaces));
      return this;
    }

    public Builder requestAttribute(String expression, Object value) {
      requestAttributes.put(expression, value);
      return this;
    }

    public Builder responseAttribute(String expression, Object value) {
      responseAttributes.put(expression, value);
      return this;
    }

    public Builder grpcInitialMetadata(String key, String value) {
      grpcInitialMetadata.put(key, value);
      return this;
    }

    public Builder grpcAuthority(String authority) {
      this.grpcAuthority = authority;
      return this;
    }

    public Builder sendProtocolConfig(boolean send) {
      this.sendProtocolConfig = send;
      return this;
    }

    public Builder gracefulClose(boolean graceful) {
      StreamClose c = streamClose;
      this.streamClose = new StreamClose(graceful, c.remoteTimeout(), c.afterLastResponse());
      return this;
    }

    public Builder remoteCloseTimeout(Duration timeout) {
      StreamClose c = streamClose;
      this.streamClose = new StreamClose(c.graceful(), timeout, c.afterLastResponse());
      return this;
    }

    public Builder closeStreamAfterLastResponse(boolean close) {
      StreamClose c = streamClose;
      this.streamClose = new StreamClose(c.graceful(), c.remoteTimeout(), close);
      return this;
    }

    /** {@code mutation_rules} as a whole. */
    public Builder mutationRules(MutationRules rules) {
      this.mutationRules = rules;
      return this;
    }

    /** {@code mutation_rules.allow_envoy}: the server may set and remove {@code x-envoy*}. */
    public Builder allowEnvoy(boolean allow) {
      MutationRules r = mutationRules;
      this.mutationRules = new MutationRules(r.allowAllRouting(), allow, r.disallowIsError());
      return this;
    }

    /** {@code mutation_rules.allow_all_routing}: host, :authority, :method, :scheme may be set. */
    public Builder allowAllRouting(boolean allow) {
      MutationRules r = mutationRules;
      this.mutationRules = new MutationRules(allow, r.allowEnvoy(), r.disallowIsError());
      return this;
    }

    /** {@code mutation_rules.disallow_is_error}: a disallowed change is a 500, not skipped. */
    public Builder disallowIsError(boolean isError) {
      MutationRules r = mutationRules;
      this.mutationRules = new MutationRules(r.allowAllRouting(), r.allowEnvoy(), isError);
      return this;
    }

    /** {@code route_cache_action}. */
    public Builder routeCacheAction(RouteCacheAction action) {
      this.routeCacheAction = action;
      return this;
    }

    /** {@code disable_clear_route_cache} (same effect as {@link RouteCacheAction#RETAIN}). */
    public Builder disableClearRouteCache(boolean disable) {
      this.disableClearRouteCache = disable;
      return this;
    }

    /** The connection manager's {@code tracing} ({@link EnvoyTracing}); null: off. */
    public Builder tracing(EnvoyTracing tracing) {
      this.tracing = tracing;
      return this;
    }

    public FilterConfig build() {
      return new FilterConfig(
          processingMode,
          messageTimeout,
          maxMessageTimeout,
          failureModeAllow,
          new MetadataOptions(receivingNamespaces, forwardingNamespaces, typedForwardingNamespaces),
          aiFilters,
          requestAttributes,
          responseAttributes,
          grpcInitialMetadata,
          grpcAuthority,
          sendProtocolConfig,
          streamClose,
          mutationRules,
          routeCacheAction,
          disableClearRouteCache,
          tracing);
    }
  }
}
