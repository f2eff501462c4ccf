package io.sluice.envoyconfig;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.accesslog.v3.AccessLog;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.cluster.v3.CircuitBreakers;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.common.mutation_rules.v3.HeaderMutation;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HealthCheck;
import io.envoyproxy.envoy.config.core.v3.Http2ProtocolOptions;
import io.envoyproxy.envoy.config.core.v3.RoutingPriority;
import io.envoyproxy.envoy.config.health_checker.redis.v2.Redis;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.ratelimit.v3.RateLimitServiceConfig;
import io.envoyproxy.envoy.config.route.v3.RateLimit;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.access_loggers.file.v3.FileAccessLog;
import io.envoyproxy.envoy.extensions.access_loggers.stream.v3.StdoutAccessLog;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.HeaderSendMode;
import io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3.HeaderMutationPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.extensions.upstreams.http.v3.HttpProtocolOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Parses every Envoy YAML shipped in {@code envoy-config/} into Envoy's own protos and checks the
 * contract Sluice relies on. A typo, an unknown field or a wrong {@code @type} fails here.
 */
class EnvoyConfigTest {

  static final Path CONFIG_DIR =
      Path.of(System.getProperty("user.dir")).resolve("../envoy-config").normalize();

  static final String EXT_PROC = "envoy.filters.http.ext_proc";
  static final String RATELIMIT = "envoy.filters.http.ratelimit";
  static final String ROUTER = "envoy.filters.http.router";
  static final String WORK_UNITS_FORMAT = "%DYNAMIC_METADATA(sluice:work_units)%";
  static final Set<String> FORMATS =
      Set.of(
          "openai-chat",
          "openai-completions",
          "openai-responses",
          "openai-embeddings",
          "anthropic-messages");

  /** The one list (also read by `sluice validate`): what every shipped config strips. */
  static final List<String> STRIPPED_HEADERS =
      io.sluice.config.TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS;

  static Stream<Path> configFiles() throws IOException {
    try (Stream<Path> files = Files.list(CONFIG_DIR)) {
      List<Path> yamls =
          files.filter(p -> p.getFileName().toString().endsWith(".yaml")).sorted().toList();
      assertThat(yamls).as("YAML files in %s", CONFIG_DIR).isNotEmpty();
      return yamls.stream();
    }
  }

  @Test
  void configDirectory_listsTheShippedFiles() throws IOException {
    assertThat(configFiles().map(p -> p.getFileName().toString()))
        .contains("envoy.yaml", "envoy-headers-only.yaml", "envoy-headers-only-native.yaml");
  }

  /**
   * The native-metadata variant: headers only, the response streamed (the token usage comes with
   * its last message), and both of Envoy's AI namespaces forwarded typed under the names Sluice's
   * {@code nativeMetadata} section reads by default.
   */
  @Test
  void nativeVariant_forwardsEnvoysAiNamespaces_typed() throws IOException {
    ExternalProcessor p = shippedExtProc("envoy-headers-only-native.yaml");
    assertThat(p.getProcessingMode().getRequestBodyMode()).isEqualTo(BodySendMode.NONE);
    assertThat(p.getProcessingMode().getResponseBodyMode()).isEqualTo(BodySendMode.STREAMED);
    assertThat(p.getMetadataOptions().getForwardingNamespaces().getTypedList())
        .containsExactlyInAnyOrder(
            io.sluice.config.NativeMetadata.REQUEST_INFO_NAMESPACE,
            io.sluice.config.NativeMetadata.TOKEN_USAGE_NAMESPACE);
    assertThat(p.getMetadataOptions().getForwardingNamespaces().getUntypedList())
        .contains("envoy.filters.http.jwt_authn");
  }

  /**
   * The buffered (body-parsing) config forwards both of Envoy's AI namespaces typed, exactly as the
   * native variant does: adding Envoy's AI filters to a buffered route turns on the cross-check
   * against the body with no other change to the config.
   */
  @Test
  void bufferedConfig_forwardsEnvoysAiNamespaces_asTheNativeVariantDoes() throws IOException {
    ExternalProcessor buffered = shippedExtProc("envoy.yaml");
    ExternalProcessor nativeVariant = shippedExtProc("envoy-headers-only-native.yaml");
    assertThat(buffered.getProcessingMode().getRequestBodyMode()).isEqualTo(BodySendMode.BUFFERED);
    assertThat(buffered.getMetadataOptions().getForwardingNamespaces().getTypedList())
        .containsExactlyInAnyOrder(
            io.sluice.config.NativeMetadata.REQUEST_INFO_NAMESPACE,
            io.sluice.config.NativeMetadata.TOKEN_USAGE_NAMESPACE);
    assertThat(buffered.getMetadataOptions()).isEqualTo(nativeVariant.getMetadataOptions());
  }

  @Test
  void typeRegistry_knowsEveryTypedConfigSluiceUses() {
    List<Descriptor> required =
        List.of(
            HttpConnectionManager.getDescriptor(),
            ExternalProcessor.getDescriptor(),
            ExtProcPerRoute.getDescriptor(),
            io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit.getDescriptor(),
            RateLimitPerRoute.getDescriptor(),
            Router.getDescriptor(),
            io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3.HeaderMutation
                .getDescriptor(),
            HeaderMutationPerRoute.getDescriptor(),
            JwtAuthentication.getDescriptor(),
            HttpProtocolOptions.getDescriptor(),
            FileAccessLog.getDescriptor(),
            StdoutAccessLog.getDescriptor(),
            Redis.getDescriptor(),
            io.envoyproxy.envoy.extensions.health_checkers.redis.v3.Redis.getDescriptor());
    for (Descriptor type : required) {
      assertThat(EnvoyBootstrapParser.typeRegistry().find(type.getFullName()))
          .as(type.getFullName())
          .isNotNull();
    }
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void everyYaml_parsesStrictlyWithEveryAnyResolved(Path file) throws IOException {
    Bootstrap bootstrap = EnvoyBootstrapParser.parseFile(file);

    List<Any> anys = EnvoyBootstrapParser.allAnys(bootstrap);
    assertThat(anys).as("typed configs in %s", file).hasSizeGreaterThan(5);
    assertThat(anys).allSatisfy(any -> assertThat(EnvoyBootstrapParser.unpack(any)).isNotNull());
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void filterChain_sanitizesThenAdmitsThenRateLimitsThenRoutes(Path file) throws IOException {
    List<String> names = httpFilterNames(hcm(EnvoyBootstrapParser.parseFile(file)));

    assertThat(names).containsSubsequence("sluice.sanitize", EXT_PROC, RATELIMIT, ROUTER);
    assertThat(names).last().isEqualTo(ROUTER);
    assertThat(names).doesNotHaveDuplicates();
    if (names.contains("envoy.filters.http.jwt_authn")) {
      assertThat(names).containsSubsequence("envoy.filters.http.jwt_authn", EXT_PROC);
    }
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void sanitizeFilter_stripsClientCopiesOfTrustedHeaders(Path file) throws IOException {
    HttpConnectionManager hcm = hcm(EnvoyBootstrapParser.parseFile(file));
    var sanitize =
        typed(
            filter(hcm, "sluice.sanitize").getTypedConfig(),
            io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3.HeaderMutation.class);

    List<String> removed =
        sanitize.getMutations().getRequestMutationsList().stream()
            .filter(HeaderMutation::hasRemove)
            .map(HeaderMutation::getRemove)
            .toList();
    assertThat(removed).containsExactlyInAnyOrderElementsOf(STRIPPED_HEADERS);
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void extProc_isConfiguredForAdmission(Path file) throws IOException {
    Bootstrap bootstrap = EnvoyBootstrapParser.parseFile(file);
    ExternalProcessor extProc = extProc(hcm(bootstrap));

    ProcessingMode mode = extProc.getProcessingMode();
    assertThat(mode.getRequestHeaderMode()).isEqualTo(HeaderSendMode.SEND);
    assertThat(mode.getResponseHeaderMode()).isEqualTo(HeaderSendMode.SEND);
    assertThat(mode.getRequestBodyMode()).isEqualTo(expectedRequestBodyMode(file));
    assertThat(mode.getResponseBodyMode()).isEqualTo(BodySendMode.STREAMED);
    assertThat(mode.getRequestTrailerMode()).isEqualTo(HeaderSendMode.SKIP);
    assertThat(mode.getResponseTrailerMode()).isEqualTo(HeaderSendMode.SKIP);

    assertThat(extProc.getFailureModeAllow()).isFalse();
    assertThat(extProc.getAllowModeOverride()).isFalse();
    assertThat(extProc.getObservabilityMode()).isFalse();
    assertThat(extProc.getGrpcService().getEnvoyGrpc().getClusterName()).isEqualTo("sluice");
    assertThat(Durations.toMillis(extProc.getMessageTimeout())).isEqualTo(1000);
    long maxMessageTimeoutMs = Durations.toMillis(extProc.getMaxMessageTimeout());
    assertThat(maxMessageTimeoutMs).isGreaterThanOrEqualTo(1000).isLessThanOrEqualTo(3_600_000);
    assertThat(maxMessageTimeoutMs).isGreaterThan(Durations.toMillis(extProc.getMessageTimeout()));
    assertThat(metadata(extProc.getGrpcService().getInitialMetadataList()))
        .containsEntry("x-sluice-max-message-timeout-ms", Long.toString(maxMessageTimeoutMs));
    assertThat(extProc.getMetadataOptions().getReceivingNamespaces().getUntypedList())
        .contains("sluice");
    assertThat(extProc.getMetadataOptions().getForwardingNamespaces().getUntypedList())
        .contains("envoy.filters.http.jwt_authn");

    // the HCM's stream idle timeout must outlast the longest hold
    assertThat(Durations.toMillis(hcm(bootstrap).getStreamIdleTimeout()))
        .isGreaterThan(maxMessageTimeoutMs);
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void routesWithExtProcOverrides_passPoolClassRouteAndFormat(Path file) throws IOException {
    List<Route> routes = routes(hcm(EnvoyBootstrapParser.parseFile(file)));
    Map<String, Map<String, String>> metadataByPath = new LinkedHashMap<>();

    for (Route route : routes) {
      Any perRoute = route.getTypedPerFilterConfigMap().get(EXT_PROC);
      if (perRoute == null) {
        continue;
      }
      ExtProcPerRoute config = typed(perRoute, ExtProcPerRoute.class);
      if (!config.hasOverrides()) {
        continue;
      }
      Map<String, String> metadata = metadata(config.getOverrides().getGrpcInitialMetadataList());
      assertThat(metadata)
          .as("route %s", route.getName())
          .containsKeys("x-sluice-pool", "x-sluice-class", "x-sluice-route", "x-sluice-format");
      assertThat(metadata.values()).allSatisfy(v -> assertThat(v).isNotBlank());
      assertThat(FORMATS).contains(metadata.get("x-sluice-format"));
      metadataByPath.put(route.getMatch().getPath(), metadata);
    }

    assertThat(metadataByPath)
        .containsKeys(
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/completions",
            "/v1/embeddings",
            "/v1/messages");
    assertThat(metadataByPath.get("/v1/chat/completions"))
        .containsEntry("x-sluice-class", "interactive")
        .containsEntry("x-sluice-format", "openai-chat");
    assertThat(metadataByPath.get("/v1/embeddings"))
        .containsEntry("x-sluice-class", "batch")
        .containsEntry("x-sluice-format", "openai-embeddings");
    assertThat(metadataByPath.get("/v1/messages"))
        .containsEntry("x-sluice-format", "anthropic-messages");
    assertThat(metadataByPath.get("/v1/responses"))
        .containsEntry("x-sluice-format", "openai-responses");
    assertThat(metadataByPath.get("/v1/completions"))
        .containsEntry("x-sluice-format", "openai-completions");
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void rateLimit_callsSluiceAndChargesWorkUnits(Path file) throws IOException {
    HttpConnectionManager hcm = hcm(EnvoyBootstrapParser.parseFile(file));
    var rateLimit =
        typed(
            filter(hcm, RATELIMIT).getTypedConfig(),
            io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit.class);

    assertThat(rateLimit.getDomain()).isEqualTo("sluice");
    assertThat(Durations.toMillis(rateLimit.getTimeout())).isEqualTo(50);
    assertThat(rateLimit.getFailureModeDeny()).isFalse();
    RateLimitServiceConfig service = rateLimit.getRateLimitService();
    assertThat(service.getGrpcService().getEnvoyGrpc().getClusterName()).isEqualTo("sluice");
    assertThat(service.getTransportApiVersion()).isEqualTo(ApiVersion.V3);

    List<RateLimit> descriptors = new ArrayList<>();
    for (VirtualHost vhost : hcm.getRouteConfig().getVirtualHostsList()) {
      descriptors.addAll(rateLimitsOf(vhost.getTypedPerFilterConfigMap()));
      for (Route route : vhost.getRoutesList()) {
        descriptors.addAll(rateLimitsOf(route.getTypedPerFilterConfigMap()));
      }
    }
    assertThat(descriptors).isNotEmpty();
    assertThat(descriptors)
        .allSatisfy(
            d -> {
              assertThat(d.getHitsAddend().getFormat()).isEqualTo(WORK_UNITS_FORMAT);
              assertThat(d.getActionsList())
                  .allSatisfy(
                      a -> {
                        assertThat(a.hasMetadata()).isTrue();
                        assertThat(a.getMetadata().getMetadataKey().getKey()).isEqualTo("sluice");
                      });
            });
    assertThat(
            descriptors.stream()
                .map(d -> d.getActionsList().stream().map(a -> a.getMetadata().getDescriptorKey()))
                .map(keys -> keys.collect(Collectors.joining(","))))
        .contains("tenant", "tenant,model");
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void sluiceCluster_isHttp2WithBreakersKeepaliveAndGrpcHealthChecks(Path file) throws IOException {
    Cluster sluice = cluster(EnvoyBootstrapParser.parseFile(file), "sluice");

    Any protocol =
        sluice
            .getTypedExtensionProtocolOptionsMap()
            .get("envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    assertThat(protocol).as("typed_extension_protocol_options").isNotNull();
    HttpProtocolOptions options = typed(protocol, HttpProtocolOptions.class);
    assertThat(options.getExplicitHttpConfig().hasHttp2ProtocolOptions()).isTrue();
    Http2ProtocolOptions http2 = options.getExplicitHttpConfig().getHttp2ProtocolOptions();
    // grpc-java's default permitKeepAliveTime is 5 minutes; faster pings get GOAWAY
    assertThat(Durations.toSeconds(http2.getConnectionKeepalive().getInterval()))
        .isGreaterThanOrEqualTo(300);
    assertThat(Durations.toMillis(http2.getConnectionKeepalive().getTimeout())).isPositive();

    CircuitBreakers.Thresholds defaults =
        sluice.getCircuitBreakers().getThresholdsList().stream()
            .filter(t -> t.getPriority() == RoutingPriority.DEFAULT)
            .findFirst()
            .orElseThrow();
    assertThat(defaults.getMaxRequests().getValue()).isGreaterThanOrEqualTo(100_000);
    assertThat(defaults.getMaxPendingRequests().getValue()).isGreaterThanOrEqualTo(100_000);

    assertThat(sluice.getHealthChecksList()).isNotEmpty();
    HealthCheck healthCheck = sluice.getHealthChecks(0);
    assertThat(healthCheck.hasGrpcHealthCheck()).isTrue();
    assertThat(healthCheck.getGrpcHealthCheck().getServiceName()).isIn("sluice", "");
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void everyReferencedCluster_isDefined(Path file) throws IOException {
    Bootstrap bootstrap = EnvoyBootstrapParser.parseFile(file);
    Set<String> defined =
        bootstrap.getStaticResources().getClustersList().stream()
            .map(Cluster::getName)
            .collect(Collectors.toSet());

    assertThat(defined).contains("sluice", "llm_upstream");
    assertThat(routes(hcm(bootstrap)))
        .allSatisfy(r -> assertThat(defined).contains(r.getRoute().getCluster()));
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void accessLog_printsSluiceDecisionFields(Path file) throws IOException {
    HttpConnectionManager hcm = hcm(EnvoyBootstrapParser.parseFile(file));
    assertThat(hcm.getAccessLogList()).isNotEmpty();
    AccessLog log = hcm.getAccessLog(0);
    StdoutAccessLog stdout = typed(log.getTypedConfig(), StdoutAccessLog.class);
    assertThat(stdout.getLogFormat().hasJsonFormat()).isTrue();

    String format = stdout.getLogFormat().getJsonFormat().toString();
    for (String key :
        List.of(
            "decision",
            "reason",
            "tenant",
            "class",
            "pool",
            "est_input_tokens",
            "est_output_tokens",
            "work_units")) {
      assertThat(format).contains("%DYNAMIC_METADATA(sluice:" + key + ")%");
    }
    assertThat(format)
        .contains("%RESPONSE_CODE%", "%RESPONSE_CODE_DETAILS%")
        .contains("%FILTER_STATE(envoy.filters.http.ext_proc:FIELD:request_header_latency_us)%");
  }

  @Test
  void misspelledField_failsToParse() throws IOException {
    String yaml = Files.readString(CONFIG_DIR.resolve("envoy.yaml"));
    assertThat(yaml).contains("max_message_timeout: 30s");
    String typo = yaml.replace("max_message_timeout: 30s", "max_mesage_timeout: 30s");

    assertThatThrownBy(() -> EnvoyBootstrapParser.parseYaml(typo))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageContaining("max_mesage_timeout");
  }

  @Test
  void misspelledTypeUrl_failsToParse() throws IOException {
    String yaml = Files.readString(CONFIG_DIR.resolve("envoy.yaml"));
    String typo = yaml.replace("ext_proc.v3.ExtProcPerRoute\n", "ext_proc.v3.ExtProcPerRout\n");
    assertThat(typo).isNotEqualTo(yaml);

    assertThatThrownBy(() -> EnvoyBootstrapParser.parseYaml(typo))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageContaining("ExtProcPerRout");
  }

  @Test
  void wrongEnumValue_failsToParse() throws IOException {
    String yaml = Files.readString(CONFIG_DIR.resolve("envoy.yaml"));
    String typo = yaml.replace("response_body_mode: STREAMED", "response_body_mode: STREAM");
    assertThat(typo).isNotEqualTo(yaml);

    assertThatThrownBy(() -> EnvoyBootstrapParser.parseYaml(typo))
        .isInstanceOf(InvalidProtocolBufferException.class);
  }

  private static BodySendMode expectedRequestBodyMode(Path file) {
    return file.getFileName().toString().contains("headers-only")
        ? BodySendMode.NONE
        : BodySendMode.BUFFERED;
  }

  private static HttpConnectionManager hcm(Bootstrap bootstrap) {
    Listener listener =
        bootstrap.getStaticResources().getListenersList().stream()
            .filter(l -> l.getAddress().getSocketAddress().getPortValue() == 10000)
            .findFirst()
            .orElseThrow(() -> new AssertionError("no listener on port 10000"));
    Filter filter = listener.getFilterChains(0).getFilters(0);
    return typed(filter.getTypedConfig(), HttpConnectionManager.class);
  }

  private static List<String> httpFilterNames(HttpConnectionManager hcm) {
    return hcm.getHttpFiltersList().stream().map(HttpFilter::getName).toList();
  }

  private static HttpFilter filter(HttpConnectionManager hcm, String name) {
    return hcm.getHttpFiltersList().stream()
        .filter(f -> f.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no http filter " + name));
  }

  /** The HCM-level ext_proc filter of a shipped config in {@code envoy-config/}. */
  private static ExternalProcessor shippedExtProc(String file) throws IOException {
    return extProc(hcm(EnvoyBootstrapParser.parseFile(CONFIG_DIR.resolve(file))));
  }

  private static ExternalProcessor extProc(HttpConnectionManager hcm) {
    return typed(filter(hcm, EXT_PROC).getTypedConfig(), ExternalProcessor.class);
  }

  private static List<Route> routes(HttpConnectionManager hcm) {
    return hcm.getRouteConfig().getVirtualHostsList().stream()
        .flatMap(v -> v.getRoutesList().stream())
        .toList();
  }

  private static Cluster cluster(Bootstrap bootstrap, String name) {
    return bootstrap.getStaticResources().getClustersList().stream()
        .filter(c -> c.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no cluster " + name));
  }

  private static List<RateLimit> rateLimitsOf(Map<String, Any> perFilterConfig) {
    return Optional.ofNullable(perFilterConfig.get(RATELIMIT))
        .map(any -> typed(any, RateLimitPerRoute.class).getRateLimitsList())
        .orElse(List.of());
  }

  private static Map<String, String> metadata(List<HeaderValue> headers) {
    Map<String, String> map = new LinkedHashMap<>();
    for (HeaderValue header : headers) {
      assertThat(map.put(header.getKey(), header.getValue())).as(header.getKey()).isNull();
    }
    return map;
  }

  private static <T extends Message> T typed(Any any, Class<T> type) {
    try {
      return any.unpack(type);
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(any.getTypeUrl() + " is not " + type.getName(), e);
    }
  }
}
