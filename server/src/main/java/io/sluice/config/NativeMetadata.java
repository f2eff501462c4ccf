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
 * @param learnedBytesPerToken the learned bytes-per-token of the headers' estimates
 */
public record NativeMetadata(
    boolean requestInfo,
    String requestInfoNamespace,
    boolean usage,
    String usageNamespace,
    LearnedRatio learnedBytesPerToken) {
  /**
   * {@code nativeMetadata.learnedBytesPerToken} (docs/estimation.md, "Learned bytes-per-token"):
   * the prior is {@code estimation.bytesPerToken}.
   *
   * @param enabled learn the ratio and divide the headers' content-length by it
   * @param warmup answers a key needs before its own ratio is used (and the most one tenant weighs)
   * @param min the smallest ratio learned
   * @param max the largest
   * @param maxKeys keys kept (pools, and pools with a model)
   * @param halfLife after which an answer weighs half
   */
  public record LearnedRatio(
      boolean enabled,
      int warmup,
      double min,
      double max,
      int maxKeys,
      java.time.Duration halfLife) {
    public static final LearnedRatio DEFAULTS =
        new LearnedRatio(true, 8, 1.5, 16, 1024, java.time.Duration.ofHours(1));
  }

  /** Envoy's default namespace of the request-info filter's record. */
  public static final String REQUEST_INFO_NAMESPACE = "envoy.ai.request_info";

  /** Envoy's default namespace of the AI protocol filter's token usage. */
  public static final String TOKEN_USAGE_NAMESPACE = "envoy.ai.token_usage";

  /** Both read, under Envoy's default namespaces (nothing is read unless Envoy forwards them). */
  public static final NativeMetadata DEFAULTS =
      new NativeMetadata(
          true,
          REQUEST_INFO_NAMESPACE,
          true,
          TOKEN_USAGE_NAMESPACE,
          NativeMetadata.LearnedRatio.DEFAULTS);
}
