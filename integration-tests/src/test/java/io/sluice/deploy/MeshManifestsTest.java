package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Parses every Istio and Envoy Gateway manifest shipped in {@code envoy-config/} as YAML, checks
 * kinds and the fields Sluice depends on, and parses each embedded Envoy config (EnvoyFilter patch
 * values) into Envoy's own protos with the strict JSON parser and the type registry of {@link
 * EnvoyBootstrapParser}: a typo or a wrong {@code @type} fails here, not in a cluster.
 */
class MeshManifestsTest {

  static final Path ENVOY_CONFIG =
      Path.of(System.getProperty("user.dir")).resolve("../envoy-config").normalize();
  static final Path ISTIO = ENVOY_CONFIG.resolve("istio");
  static final Path EG = ENVOY_CONFIG.resolve("envoy-gateway");

  /** Sluice's Service (k8s/base/service.yaml) as Istio names its outbound cluster. */
  static final String SLUICE_CLUSTER = "outbound|8081||sluice.sluice.svc.cluster.local";

  static final String EXT_PROC = "envoy.filters.http.ext_proc";
  static final String RATELIMIT = "envoy.filters.http.ratelimit";
  static final String WORK_UNITS = "%DYNAMIC_METADATA(sluice:work_units)%";

  static final Map<String, Set<String>> KINDS =
      Map.of(
          "networking.istio.io/v1alpha3", Set.of("EnvoyFilter"),
          "networking.istio.io/v1", Set.of("DestinationRule", "VirtualService"),
          "security.istio.io/v1", Set.of("RequestAuthentication"),
          "gateway.envoyproxy.io/v1alpha1",
              Set.of(
                  "EnvoyExtensionPolicy",
                  "BackendTrafficPolicy",
                  "EnvoyProxy",
                  "ClientTrafficPolicy",
                  "SecurityPolicy"),
          "gateway.networking.k8s.io/v1beta1", Set.of("ReferenceGrant"),
          "v1", Set.of("ConfigMap"));

  /** Istio EnvoyFilter: what each applyTo's patch value is, as an Envoy proto. */
  static final Map<String, Message> APPLY_TO =
      Map.of(
          "HTTP_FILTER", HttpFilter.getDefaultInstance(),
          "VIRTUAL_HOST", VirtualHost.getDefaultInstance(),
          "HTTP_ROUTE", Route.getDefaultInstance(),
          "CLUSTER", Cluster.getDefaultInstance(),
          "NETWORK_FILTER", io.envoyproxy.envoy.config.listener.v3.Filter.getDefaultInstance());

  static final Set<String> CONTEXTS =
      Set.of("GATEWAY", "SIDECAR_INBOUND", "SIDECAR_OUTBOUND", "ANY");
  static final Set<String> OPERATIONS =
      Set.of("MERGE", "ADD", "REMOVE", "INSERT_BEFORE", "INSERT_AFTER", "INSERT_FIRST", "REPLACE");

  static final JsonFormat.Parser STRICT =
      JsonFormat.parser().usingTypeRegistry(EnvoyBootstrapParser.typeRegistry());
  static final ObjectMapper JSON = new ObjectMapper();

  static Stream<Path> manifestFiles() throws IOException {
    List<Path> files = new ArrayList<>();
    for (Path dir : List.of(ISTIO, EG)) {
      try (Stream<Path> s = Files.list(dir)) {
        s.filter(p -> p.toString().endsWith(".yaml") || p.toString().endsWith(".yaml.example"))
            .sorted()
            .forEach(files::add);
      }
    }
    assertThat(files).hasSizeGreaterThanOrEqualTo(5);
    return files.stream();
  }

  @ParameterizedTest
  @MethodSource("manifestFiles")
  void manifest_everyDocument_hasKnownKindAndName(Path file) {
    List<JsonNode> docs = KubeYaml.documents(file);
    assertThat(docs).isNotEmpty();
    for (JsonNode doc : docs) {
      String apiVersion = doc.path("apiVersion").asText();
      assertThat(KINDS).as(file + ": apiVersion").containsKey(apiVersion);
      assertThat(KINDS.get(apiVersion)).as(file + ": kind").contains(doc.path("kind").asText());
      assertThat(doc.path("metadata").path("name").asText()).as(file + ": name").isNotBlank();
      assertThat(doc.path("spec").isObject() || doc.path("data").isObject())
          .as(file + ": spec or data")
          .isTrue();
    }
  }

  @ParameterizedTest
  @MethodSource("envoyFilters")
  void envoyFilter_everyPatchValue_parsesIntoEnvoyProto(Path file, JsonNode filter)
      throws Exception {
    assertOnlyKeys(
        filter.path("spec"),
        Set.of("workloadSelector", "configPatches", "priority", "targetRefs"),
        file);
    assertThat(filter.path("spec").path("configPatches")).isNotEmpty();
    for (JsonNode patch : filter.path("spec").path("configPatches")) {
      assertOnlyKeys(patch, Set.of("applyTo", "match", "patch"), file);
      assertThat(APPLY_TO).containsKey(patch.path("applyTo").asText());
      assertThat(CONTEXTS).contains(patch.path("match").path("context").asText());
      assertThat(OPERATIONS).contains(patch.path("patch").path("operation").asText());
      Message parsed = parsePatchValue(patch);
      // Every nested Any resolves to a known Envoy message.
      EnvoyBootstrapParser.allAnys(parsed).forEach(EnvoyBootstrapParser::unpack);
    }
  }

  @ParameterizedTest
  @MethodSource("envoyFilters")
  void envoyFilter_filters_sanitizeThenExtProcThenRatelimitBeforeRouter(Path file, JsonNode filter)
      throws Exception {
    List<HttpFilter> inserted = new ArrayList<>();
    for (JsonNode patch : filter.path("spec").path("configPatches")) {
      if (!patch.path("applyTo").asText().equals("HTTP_FILTER")) {
        continue;
      }
      HttpFilter f = (HttpFilter) parsePatchValue(patch);
      if (f.getName().equals("sluice.sanitize")) {
        // first in the chain, before Istio's jwt_authn (whose verified x-tenant-id must survive)
        assertThat(patch.path("patch").path("operation").asText()).isEqualTo("INSERT_FIRST");
        assertThat(patch.at("/match/listener/filterChain/filter/subFilter").isMissingNode())
            .isTrue();
      } else {
        assertThat(patch.path("patch").path("operation").asText()).isEqualTo("INSERT_BEFORE");
        assertThat(patch.at("/match/listener/filterChain/filter/subFilter/name").asText())
            .isEqualTo("envoy.filters.http.router");
      }
      inserted.add(f);
    }
    // Sanitize goes first; each INSERT_BEFORE router lands right before the router, so list
    // order is chain order.
    assertThat(inserted.stream().map(HttpFilter::getName))
        .containsExactly("sluice.sanitize", EXT_PROC, RATELIMIT);

    ExternalProcessor extProc = inserted.get(1).getTypedConfig().unpack(ExternalProcessor.class);
    assertThat(extProc.getGrpcService().getEnvoyGrpc().getClusterName()).isEqualTo(SLUICE_CLUSTER);
    assertThat(extProc.getFailureModeAllow()).isFalse();
    assertThat(extProc.getProcessingMode().getRequestBodyMode()).isEqualTo(BodySendMode.BUFFERED);
    assertThat(extProc.getProcessingMode().getResponseBodyMode()).isEqualTo(BodySendMode.STREAMED);
    assertThat(extProc.getMessageTimeout().getSeconds()).isEqualTo(1);
    assertThat(extProc.getMetadataOptions().getReceivingNamespaces().getUntypedList())
        .contains("sluice");
    long maxMs = extProc.getMaxMessageTimeout().getSeconds() * 1000;
    assertThat(maxMs).isPositive();
    assertThat(extProc.getGrpcService().getInitialMetadataList())
        .contains(
            HeaderValue.newBuilder()
                .setKey("x-sluice-max-message-timeout-ms")
                .setValue(Long.toString(maxMs))
                .build());

    RateLimit rl = inserted.get(2).getTypedConfig().unpack(RateLimit.class);
    assertThat(rl.getDomain()).isEqualTo("sluice");
    assertThat(rl.getRateLimitService().getGrpcService().getEnvoyGrpc().getClusterName())
        .isEqualTo(SLUICE_CLUSTER);
  }

  @ParameterizedTest
  @MethodSource("envoyFilters")
  void envoyFilter_descriptors_chargeWorkUnitsPerTenant(Path file, JsonNode filter)
      throws Exception {
    RateLimitPerRoute perRoute = null;
    for (JsonNode patch : filter.path("spec").path("configPatches")) {
      if (patch.path("applyTo").asText().equals("VIRTUAL_HOST")) {
        VirtualHost vh = (VirtualHost) parsePatchValue(patch);
        perRoute = vh.getTypedPerFilterConfigOrThrow(RATELIMIT).unpack(RateLimitPerRoute.class);
      }
    }
    assertThat(perRoute).as(file.toString()).isNotNull();
    assertThat(perRoute.getRateLimitsList())
        .isNotEmpty()
        .allSatisfy(
            r -> {
              assertThat(r.getHitsAddend().getFormat()).isEqualTo(WORK_UNITS);
              assertThat(r.getActions(0).getMetadata().getDescriptorKey()).isEqualTo("tenant");
            });
  }

  @Test
  void istioGateway_routePatches_matchVirtualServiceRoutesAndThePolicy() throws Exception {
    List<JsonNode> docs = KubeYaml.documents(ISTIO.resolve("sluice-gateway.yaml"));
    JsonNode filter = byKind(docs, "EnvoyFilter");
    JsonNode vs = byKind(docs, "VirtualService");
    Set<String> vsRoutes = new TreeSet<>();
    vs.path("spec").path("http").forEach(r -> vsRoutes.add(r.path("name").asText()));
    SluiceConfig policy = shippedPolicy();
    int patched = 0;
    for (JsonNode patch : filter.path("spec").path("configPatches")) {
      if (!patch.path("applyTo").asText().equals("HTTP_ROUTE")) {
        continue;
      }
      patched++;
      assertThat(vsRoutes)
          .contains(patch.at("/match/routeConfiguration/vhost/route/name").asText());
      assertThat(patch.path("patch").path("operation").asText()).isEqualTo("MERGE");
      Route route = (Route) parsePatchValue(patch);
      ExtProcPerRoute perRoute =
          route.getTypedPerFilterConfigOrThrow(EXT_PROC).unpack(ExtProcPerRoute.class);
      for (HeaderValue h : perRoute.getOverrides().getGrpcInitialMetadataList()) {
        if (h.getKey().equals("x-sluice-pool")) {
          assertThat(policy.pools()).containsKey(h.getValue());
        }
        if (h.getKey().equals("x-sluice-class")) {
          assertThat(policy.classes()).containsKey(h.getValue());
        }
      }
    }
    assertThat(patched).isGreaterThanOrEqualTo(3);
    JsonNode dr = byKind(docs, "DestinationRule");
    assertThat(dr.at("/spec/host").asText())
        .isEqualTo(SLUICE_CLUSTER.substring(SLUICE_CLUSTER.lastIndexOf('|') + 1));
    assertThat(dr.at("/spec/trafficPolicy/connectionPool/http/http2MaxRequests").asInt())
        .isGreaterThanOrEqualTo(10000);
  }

  @Test
  void envoyGateway_extensionPolicy_usesOnlyKnownFieldsAndSluicesSettings() {
    List<JsonNode> docs = KubeYaml.documents(EG.resolve("sluice-extension-policy.yaml"));
    JsonNode policy = byKind(docs, "EnvoyExtensionPolicy");
    JsonNode spec = policy.path("spec");
    // envoyextensionypolicy_types.go: PolicyTargetReferences inline + wasm/extProc/lua/...
    assertOnlyKeys(
        spec,
        Set.of(
            "targetRef",
            "targetRefs",
            "targetSelectors",
            "extProc",
            "wasm",
            "lua",
            "dynamicModule",
            "backends"),
        EG);
    assertThat(spec.path("extProc")).hasSize(1);
    JsonNode extProc = spec.path("extProc").get(0);
    // ext_proc_types.go: ExtProc = BackendCluster inline +
    // stage/messageTimeout/failOpen/processingMode/metadata.
    assertOnlyKeys(
        extProc,
        Set.of(
            "backendRef",
            "backendRefs",
            "backendSettings",
            "stage",
            "messageTimeout",
            "failOpen",
            "processingMode",
            "metadata"),
        EG);
    assertOnlyKeys(
        extProc.path("processingMode"), Set.of("request", "response", "allowModeOverride"), EG);
    assertOnlyKeys(
        extProc.path("processingMode").path("request"), Set.of("body", "attributes"), EG);
    assertOnlyKeys(
        extProc.path("processingMode").path("response"), Set.of("body", "attributes"), EG);
    assertOnlyKeys(
        extProc.path("metadata"), Set.of("accessibleNamespaces", "writableNamespaces"), EG);
    assertThat(extProc.at("/processingMode/request/body").asText()).isEqualTo("Buffered");
    assertThat(extProc.at("/processingMode/response/body").asText()).isEqualTo("Streamed");
    assertThat(extProc.path("messageTimeout").asText()).isEqualTo("1s");
    assertThat(extProc.path("failOpen").asBoolean(true)).isFalse();
    assertThat(extProc.at("/metadata/writableNamespaces").toString()).contains("\"sluice\"");
    JsonNode ref = extProc.path("backendRefs").get(0);
    assertThat(ref.path("name").asText()).isEqualTo("sluice");
    assertThat(ref.path("namespace").asText()).isEqualTo("sluice");
    assertThat(ref.path("port").asInt()).isEqualTo(SluiceDeploymentContract.GRPC_PORT);
    // A cross-namespace backendRef needs a ReferenceGrant in Sluice's namespace.
    JsonNode grant = byKind(docs, "ReferenceGrant");
    assertThat(grant.at("/metadata/namespace").asText()).isEqualTo("sluice");
    assertThat(grant.at("/spec/from/0/kind").asText()).isEqualTo("EnvoyExtensionPolicy");
    assertThat(grant.at("/spec/from/0/namespace").asText())
        .isEqualTo(policy.at("/metadata/namespace").asText());
    assertThat(grant.at("/spec/to/0/name").asText()).isEqualTo("sluice");
  }

  /**
   * Every shipped Envoy config (plain Envoy, Istio EnvoyFilters, Envoy Gateway) strips exactly the
   * headers of {@link io.sluice.config.TrustedHeaders#STRIPPED_BY_SHIPPED_ENVOY_CONFIGS}, the list
   * {@code sluice validate} checks trusted headers against.
   */
  @Test
  void everyShippedEnvoyConfig_stripsExactlyTheTrustedHeaderList() throws Exception {
    List<String> list = io.sluice.config.TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS;
    Map<String, List<String>> stripped = new java.util.TreeMap<>();
    try (Stream<Path> s = Files.list(ENVOY_CONFIG)) {
      for (Path f : s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
        var bootstrap = EnvoyBootstrapParser.parseFile(f);
        for (var any : EnvoyBootstrapParser.allAnys(bootstrap)) {
          if (any.getTypeUrl()
              .endsWith("envoy.extensions.filters.http.header_mutation.v3.HeaderMutation")) {
            stripped.put(
                f.getFileName().toString(),
                removed(
                    any.unpack(
                        io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3
                            .HeaderMutation.class)));
          }
        }
      }
    }
    for (var args : envoyFilters().toList()) {
      Path file = (Path) args.get()[0];
      JsonNode filter = (JsonNode) args.get()[1];
      for (JsonNode patch : filter.path("spec").path("configPatches")) {
        if (patch.at("/patch/value/name").asText().equals("sluice.sanitize")) {
          HttpFilter f = (HttpFilter) parsePatchValue(patch);
          stripped.put(
              "istio/" + file.getFileName(),
              removed(
                  f.getTypedConfig()
                      .unpack(
                          io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3
                              .HeaderMutation.class)));
        }
      }
    }
    JsonNode ctp =
        byKind(
            KubeYaml.documents(EG.resolve("sluice-client-traffic-policy.yaml")),
            "ClientTrafficPolicy");
    assertOnlyKeys(
        ctp.path("spec"), Set.of("targetRef", "targetRefs", "targetSelectors", "headers"), EG);
    assertThat(ctp.at("/spec/targetRefs/0/kind").asText()).isEqualTo("Gateway");
    assertThat(ctp.at("/spec/targetRefs/0/name").asText()).isEqualTo("eg");
    // gwapiv1.HTTPHeaderFilter: set, add, remove
    assertOnlyKeys(ctp.at("/spec/headers/earlyRequestHeaders"), Set.of("set", "add", "remove"), EG);
    List<String> early = new ArrayList<>();
    ctp.at("/spec/headers/earlyRequestHeaders/remove").forEach(h -> early.add(h.asText()));
    stripped.put("envoy-gateway/sluice-client-traffic-policy.yaml", early);

    assertThat(stripped.keySet())
        .contains(
            "envoy.yaml",
            "envoy-headers-only.yaml",
            "istio/sluice-gateway.yaml",
            "istio/sluice-sidecar-inbound.yaml",
            "envoy-gateway/sluice-client-traffic-policy.yaml");
    stripped.forEach(
        (file, headers) -> assertThat(headers).as(file).containsExactlyInAnyOrderElementsOf(list));
  }

  private static List<String> removed(
      io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3.HeaderMutation hm) {
    return hm.getMutations().getRequestMutationsList().stream()
        .filter(m -> m.hasRemove())
        .map(m -> m.getRemove())
        .toList();
  }

  /** The shipped policies trust no request header outside that list for who pays or who waits. */
  @Test
  void shippedPolicies_trustNoHeaderTheShippedConfigsLeaveToClients() throws Exception {
    assertThat(io.sluice.config.TrustedHeaders.warnings(shippedPolicy())).isEmpty();
    assertThat(io.sluice.config.TrustedHeaders.warnings(ConfigLoader.embeddedDefault())).isEmpty();
  }

  @Test
  void envoyGateway_rateLimitPolicy_costIsSluicesWorkUnits() {
    List<JsonNode> docs = KubeYaml.documents(EG.resolve("sluice-rate-limit-policy.yaml"));
    JsonNode rateLimit = byKind(docs, "BackendTrafficPolicy").path("spec").path("rateLimit");
    // ratelimit_types.go: RateLimitSpec{type, global, local}, RateLimitRule{clientSelectors,
    // limit, cost, shared, shadowMode}, RateLimitCostSpecifier{from, number, metadata}.
    assertOnlyKeys(rateLimit, Set.of("type", "global", "local"), EG);
    assertThat(rateLimit.path("type").asText()).isEqualTo("Global");
    assertThat(rateLimit.path("global").path("rules")).isNotEmpty();
    for (JsonNode rule : rateLimit.path("global").path("rules")) {
      assertOnlyKeys(rule, Set.of("clientSelectors", "limit", "cost", "shared", "shadowMode"), EG);
      assertOnlyKeys(rule.path("limit"), Set.of("requests", "unit"), EG);
      assertThat(Set.of("Second", "Minute", "Hour", "Day", "Month", "Year"))
          .contains(rule.at("/limit/unit").asText());
      for (JsonNode selector : rule.path("clientSelectors")) {
        assertOnlyKeys(selector, Set.of("headers", "methods", "path", "sourceCIDR"), EG);
        for (JsonNode h : selector.path("headers")) {
          assertOnlyKeys(h, Set.of("type", "name", "value", "invert"), EG);
          assertThat(Set.of("Exact", "RegularExpression", "Distinct"))
              .contains(h.path("type").asText());
        }
      }
      JsonNode cost = rule.path("cost").path("request");
      assertOnlyKeys(cost, Set.of("from", "number", "metadata"), EG);
      assertThat(cost.path("from").asText()).isEqualTo("Metadata");
      assertThat(cost.at("/metadata/namespace").asText()).isEqualTo("sluice");
      assertThat(cost.at("/metadata/key").asText()).isEqualTo("work_units");
    }
    JsonNode proxy = byKind(docs, "EnvoyProxy").path("spec");
    assertOnlyKeys(proxy.path("filterOrder").get(0), Set.of("name", "before", "after"), EG);
    assertThat(proxy.at("/filterOrder/0/name").asText()).isEqualTo(RATELIMIT);
    assertThat(proxy.at("/filterOrder/0/after").asText()).isEqualTo(EXT_PROC);
  }

  @Test
  void envoyGateway_configNote_rateLimitBackendIsRedis() {
    JsonNode map = KubeYaml.documents(EG.resolve("envoy-gateway-config.yaml.example")).get(0);
    JsonNode eg = KubeYaml.documents(map.at("/data/envoy-gateway.yaml").asText()).get(0);
    assertThat(eg.path("kind").asText()).isEqualTo("EnvoyGateway");
    // envoygateway_types.go: RateLimit{backend, timeout, failClosed, telemetry}.
    assertOnlyKeys(
        eg.path("rateLimit"), Set.of("backend", "timeout", "failClosed", "telemetry"), EG);
    assertThat(eg.at("/rateLimit/backend/type").asText()).isEqualTo("Redis");
    assertThat(eg.at("/rateLimit/backend/redis/url").asText()).isNotBlank();
  }

  // ---- the checks can fail -------------------------------------------------------------------

  @Test
  void patchValue_misspelledEnvoyField_fails() throws Exception {
    JsonNode patch = firstHttpFilterPatch("envoy.filters.http.ext_proc");
    ObjectNode typed = (ObjectNode) patch.at("/patch/value/typed_config");
    typed.set("message_timout", typed.remove("message_timeout"));
    assertThatThrownBy(() -> parsePatchValue(patch))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageContaining("message_timout");
  }

  @Test
  void patchValue_unknownTypeUrl_fails() throws Exception {
    JsonNode patch = firstHttpFilterPatch("envoy.filters.http.ext_proc");
    ((ObjectNode) patch.at("/patch/value/typed_config"))
        .put(
            "@type",
            "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcesor");
    assertThatThrownBy(() -> parsePatchValue(patch))
        .isInstanceOf(InvalidProtocolBufferException.class);
  }

  @Test
  void assertOnlyKeys_unknownField_fails() {
    JsonNode node = KubeYaml.documents("messageTimeout: 1s\nmesageTimeout: 2s\n").get(0);
    assertThatThrownBy(() -> assertOnlyKeys(node, Set.of("messageTimeout"), EG))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("mesageTimeout");
  }

  // ---- helpers --------------------------------------------------------------------------------

  static Stream<org.junit.jupiter.params.provider.Arguments> envoyFilters() throws IOException {
    List<org.junit.jupiter.params.provider.Arguments> out = new ArrayList<>();
    try (Stream<Path> s = Files.list(ISTIO)) {
      for (Path file : s.filter(Files::isRegularFile).sorted().toList()) {
        for (JsonNode doc : KubeYaml.documents(file)) {
          if (doc.path("kind").asText().equals("EnvoyFilter")) {
            out.add(org.junit.jupiter.params.provider.Arguments.of(file, doc));
          }
        }
      }
    }
    assertThat(out).hasSize(2);
    return out.stream();
  }

  static Message parsePatchValue(JsonNode patch) throws IOException {
    Message.Builder builder = APPLY_TO.get(patch.path("applyTo").asText()).newBuilderForType();
    STRICT.merge(JSON.writeValueAsString(patch.path("patch").path("value")), builder);
    return builder.build();
  }

  private static JsonNode firstHttpFilterPatch(String name) {
    for (JsonNode doc : KubeYaml.documents(ISTIO.resolve("sluice-gateway.yaml"))) {
      for (JsonNode patch : doc.path("spec").path("configPatches")) {
        if (patch.at("/patch/value/name").asText().equals(name)) {
          return patch.deepCopy();
        }
      }
    }
    throw new AssertionError(name + " not patched in");
  }

  static JsonNode byKind(List<JsonNode> docs, String kind) {
    return docs.stream()
        .filter(d -> d.path("kind").asText().equals(kind))
        .findFirst()
        .orElseThrow(() -> new AssertionError(kind + " missing"));
  }

  static void assertOnlyKeys(JsonNode node, Set<String> allowed, Object where) {
    Set<String> unknown = new TreeSet<>();
    node.fieldNames()
        .forEachRemaining(
            k -> {
              if (!allowed.contains(k)) {
                unknown.add(k);
              }
            });
    assertThat(unknown).as(where + ": fields not in the API " + allowed).isEmpty();
  }

  static SluiceConfig shippedPolicy() {
    ConfigMap map =
        KubernetesManifestsTest.find(
            KubernetesManifestsTest.base(), ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    return ConfigLoader.parse(map.getData().get(SluiceDeploymentContract.CONFIG_KEY));
  }
}
