package io.sluice.config;

/**
 * The {@code nativeMetadata} policy (docs/envoy.md, "Envoy's native AI metadata"): whether Sluice
 * reads the request info and token usage Envoy's AI filters publish, and under which namespaces
 * (those Envoy forwards with {@code metadata_options.forwarding_namespaces}).
 *
 * @param requestInfo read {@code envoy.data.ai.v3.RequestInfo} at the request headers
 * @param requestInfoNamespace its namespace
 * @param usage read {@code envoy.data.ai.v3.TokenUsage} at the response's end
 * @param usageNamespace its namespace
 */
public record NativeMetadata(
    boolean requestInfo, String requestInfoNamespace, boolean usage, String usageNamespace) {
  /** Envoy's default namespace of the request-info filter's record. */
  public static final String REQUEST_INFO_NAMESPACE = "envoy.ai.request_info";

  /** Envoy's default namespace of the AI protocol filter's token usage. */
  public static final String TOKEN_USAGE_NAMESPACE = "envoy.ai.token_usage";

  /** Both read, under Envoy's default namespaces (nothing is read unless Envoy forwards them). */
  public static final NativeMetadata DEFAULTS =
      new NativeMetadata(true, REQUEST_INFO_NAMESPACE, true, TOKEN_USAGE_NAMESPACE);
}
