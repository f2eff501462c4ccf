package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.envoyproxy.envoy.extensions.filters.http.header_mutation.v3.HeaderMutation;
import io.envoyproxy.envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication;
import io.envoyproxy.envoy.extensions.filters.http.jwt_authn.v3.JwtProvider;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.sluice.config.ConfigLoader;
import io.sluice.config.ConfigWriter;
import io.sluice.config.SluiceConfig;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.config.TenantSignals;
import io.sluice.core.share.ReplicaPolicy;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every shipped pair must agree: each Envoy config of {@code envoy-config/} (standalone, Istio,
 * Envoy Gateway) × each shipped policy (the embedded default and the k8s ConfigMap) × the k8s
 * manifests. Fails where a policy reads its tenant from something no shipped Envoy sets, reads a
 * per-request id as its operation id, holds requests behind an Envoy that cannot hold, sizes its
 * Redis-down fallback for fewer replicas than the HPA may run, or where the standalone Envoy's
 * cluster cannot see every replica. The ConfigMap's policy is compared with the embedded default
 * key by key: every difference must be listed in {@link #CONFIG_MAP_DIFFERENCES} with its reason.
 */
class ShippedPairsTest {

  static final Path ENVOY_CONFIG = MeshManifestsTest.ENVOY_CONFIG;
  static final Path HA = KubernetesManifestsTest.K8S.resolve("overlays/ha");

  /**
   * Where the ConfigMap's effective policy may differ from the embedded default's, and why. A
   * difference not listed here fails the test; so does an entry that no longer differs.
   */
  static final Map<String, String> CONFIG_MAP_DIFFERENCES =
      Map.of(
          "decisionLog.sampleRate",
          "production volume: 1 % of admitted requests (refusals are always logged)",
          "replicas.expectedReplicas",
          "the ha overlay's HPA maxReplicas, so the Redis-down fallback share cannot over-admit at"
              + " any replica count (the embedded default is for one replica: no fallback)");

  static Stream<Arguments> shippedPolicies() {
    return Stream.of(
        Arguments.of("embedded default", ConfigLoader.embeddedDefault()),
        Arguments.of("k8s ConfigMap", MeshManifestsTest.shippedPolicy()));
  }

  /** The tenant sources each shipped Envoy config sets from something it verified. */
  static Map<String, Set<Source>> tenantSourcesSetByShippedConfigs() throws Exception {
    Map<String, Set<Source>> out = new TreeMap<>();
    for (String f : List.of("envoy.yaml", "envoy-headers-only.yaml")) {
      Bootstrap b = EnvoyBootstrapParser.parseFile(ENVOY_CONFIG.resolve(f));
      Set<Source> set = new LinkedHashSet<>();
      List<String> stripped = new ArrayList<>();
      ExternalProcessor extProc = null;
      for (var any : EnvoyBootstrapParser.allAnys(b)) {
        if (any.is(HeaderMutation.class)) {
          any.unpack(HeaderMutation.class).getMutations().getRequestMutationsList().stream()
              .filter(m -> m.hasRemove())
              .forEach(m -> stripped.add(m.getRemove()));
        } else if (any.is(ExternalProcessor.class)) {
          extProc = any.unpack(ExternalProcessor.class);
        } else if (any.is(JwtAuthentication.class)) {
          for (JwtProvider p : any.unpack(JwtAuthentication.class).getProvidersMap().values()) {
            p.getClaimToHeadersList().stream()
                .filter(c -> c.getClaimName().equals("tenant"))
                .forEach(c -> set.add(new Source.Header(c.getHeaderName())));
            if (!p.getPayloadInMetadata().isEmpty()) {
              set.add(
                  new Source.DynamicMetadata(
                      "envoy.filters.http.jwt_authn", List.of(p.getPayloadInMetadata(), "tenant")));
            }
          }
        }
      }
      assertThat(extProc).as(f).isNotNull();
      // a header is set only by the Envoy when client copies are stripped first
      set.removeIf(s -> s instanceof Source.Header h && !stripped.contains(h.header()));
      // jwt_authn metadata reaches Sluice only when ext_proc forwards its namespace
      if (!extProc
          .getMetadataOptions()
          .getForwardingNamespaces()
          .getUntypedList()
          .contains("envoy.filters.http.jwt_authn")) {
        set.removeIf(s -> s instanceof Source.DynamicMetadata);
      }
      out.put(f, set);
    }
    // Istio ingress gateway: the sanitizer runs first, then Istio's RequestAuthentication copies
    // the verified claim into x-tenant-id (outputClaimToHeaders).
    List<JsonNode> istio =
        KubeYaml.documents(MeshManifestsTest.ISTIO.resolve("sluice-gateway.yaml"));
    Set<Source> istioSet = new LinkedHashSet<>();
    JsonNode ra = MeshManifestsTest.byKind(istio, "RequestAuthentication");
    for (JsonNode rule : ra.at("/spec/jwtRules")) {
      for (JsonNode h : rule.path("outputClaimToHeaders")) {
        if (h.path("claim").asText().equals("tenant")) {
          istioSet.add(new Source.Header(h.path("header").asText()));
        }
      }
    }
    JsonNode sanitize = null;
    for (JsonNode patch :
        MeshManifestsTest.byKind(istio, "EnvoyFilter").at("/spec/configPatches")) {
      if (patch.at("/patch/value/name").asText().equals("sluice.sanitize")) {
        sanitize = patch;
      }
    }
    assertThat(sanitize).isNotNull();
    if (!sanitize.at("/patch/operation").asText().equals("INSERT_FIRST")) {
      istioSet.clear(); // stripped after Istio's jwt_authn: the verified copy is gone too
    }
    out.put("istio/sluice-gateway.yaml", istioSet);
    // Envoy Gateway: the SecurityPolicy's JWT provider sets x-tenant-id from the verified claim;
    // client copies are removed before any filter (earlyRequestHeaders), so it is the only one.
    // The shipped rate limit policy buckets by it too.
    JsonNode sp =
        MeshManifestsTest.byKind(
            KubeYaml.documents(MeshManifestsTest.EG.resolve("sluice-security-policy.yaml")),
            "SecurityPolicy");
    MeshManifestsTest.assertOnlyKeys(
        sp.path("spec"), Set.of("targetRefs", "jwt"), "SecurityPolicy");
    MeshManifestsTest.assertOnlyKeys(
        sp.at("/spec/jwt"), Set.of("optional", "providers"), "SecurityPolicy jwt");
    assertThat(sp.at("/spec/jwt/optional").asBoolean())
        .as("a request without a token is the anonymous tenant, not a 401")
        .isTrue();
    assertThat(sp.at("/spec/targetRefs/0/name").asText()).isEqualTo("eg");
    Set<Source> egSet = new LinkedHashSet<>();
    for (JsonNode p : sp.at("/spec/jwt/providers")) {
      MeshManifestsTest.assertOnlyKeys(
          p,
          Set.of(
              "name",
              "issuer",
              "audiences",
              "remoteJWKS",
              "localJWKS",
              "claimToHeaders",
              "recomputeRoute",
              "extractFrom"),
          "SecurityPolicy provider");
      for (JsonNode c : p.path("claimToHeaders")) {
        MeshManifestsTest.assertOnlyKeys(c, Set.of("header", "claim"), "claimToHeaders");
        if (c.path("claim").asText().equals("tenant")) {
          egSet.add(new Source.Header(c.path("header").asText()));
        }
      }
    }
    List<JsonNode> ctp =
        KubeYaml.documents(MeshManifestsTest.EG.resolve("sluice-client-traffic-policy.yaml"));
    List<String> early = new ArrayList<>();
    ctp.get(0).at("/spec/headers/earlyRequestHeaders/remove").forEach(h -> early.add(h.asText()));
    egSet.removeIf(h -> h instanceof Source.Header hh && !early.contains(hh.header()));
    String rl =
        java.nio.file.Files.readString(
            MeshManifestsTest.EG.resolve("sluice-rate-limit-policy.yaml"));
    assertThat(rl).contains("name: x-tenant-id");
    out.put("envoy-gateway", egSet);
    return out;
  }

  @Test
  void tenantSignalList_isWhatTheShippedConfigsSet() throws Exception {
    Set<Source> union = new LinkedHashSet<>();
    tenantSourcesSetByShippedConfigs().values().forEach(union::addAll);
    assertThat(union)
        .containsExactlyInAnyOrderElementsOf(TenantSignals.SET_BY_SHIPPED_ENVOY_CONFIGS);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedPolicies")
  void everyShippedEnvoyConfig_setsATenantSourceThePolicyReads(String name, SluiceConfig policy)
      throws Exception {
    List<Source> reads = policy.signals().get(Signal.TENANT);
    tenantSourcesSetByShippedConfigs()
        .forEach(
            (config, sets) ->
                assertThat(sets)
                    .as("%s sets a tenant source that the %s reads (%s)", config, name, reads)
                    .anyMatch(reads::contains));
    assertThat(TenantSignals.warnings(policy)).as(name).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedPolicies")
  void noTenant_isNotCappedBelowThePool(String name, SluiceConfig policy) {
    var anon = policy.tiers().get(policy.tenants().anonymousTier());
    var unknown = policy.tiers().get(policy.tenants().unknownTier());
    for (var pool : policy.pools().values()) {
      for (var tier : List.of(anon, unknown)) {
        assertThat(tier.maxInFlight() == 0 || tier.maxInFlight() >= pool.maxRequests())
            .as("%s: tier %s caps a tenant below pool %s", name, tier.name(), pool.name())
            .isTrue();
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedPolicies")
  void operationId_isIdempotencyKeyOnly(String name, SluiceConfig policy) {
    assertThat(policy.signals().get(Signal.OPERATION_ID))
        .as(name)
        .containsExactly(new Source.Header("idempotency-key"));
  }

  /**
   * Envoy Gateway's ext_proc has no max_message_timeout and sends no gRPC initial metadata: a
   * shipped policy must not hold on its own (pool maxMessageTimeout 0), and the Envoys that can
   * hold say so per stream, with the signal the policy reads.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedPolicies")
  void hold_onlyWhereTheEnvoySaysItCan(String name, SluiceConfig policy) throws Exception {
    JsonNode eg =
        MeshManifestsTest.byKind(
            KubeYaml.documents(MeshManifestsTest.EG.resolve("sluice-extension-policy.yaml")),
            "EnvoyExtensionPolicy");
    for (JsonNode ext : eg.at("/spec/extProc")) {
      assertThat(ext.has("maxMessageTimeout")).isFalse();
    }
    assertThat(policy.pools().values())
        .as("%s: pools that hold without the Envoy's word (Envoy Gateway would 504)", name)
        .allSatisfy(p -> assertThat(p.maxMessageTimeout()).isEqualTo(Duration.ZERO));
    assertThat(policy.signals().get(Signal.MAX_MESSAGE_TIMEOUT_MS))
        .contains(new Source.Metadata("x-sluice-max-message-timeout-ms"));
    Bootstrap b = EnvoyBootstrapParser.parseFile(ENVOY_CONFIG.resolve("envoy.yaml"));
    for (var any : EnvoyBootstrapParser.allAnys(b)) {
      if (any.is(ExternalProcessor.class)) {
        ExternalProcessor p = any.unpack(ExternalProcessor.class);
        assertThat(p.getGrpcService().getInitialMetadataList())
            .anyMatch(
                h ->
                    h.getKey().equals("x-sluice-max-message-timeout-ms")
                        && Long.parseLong(h.getValue())
                            == p.getMaxMessageTimeout().getSeconds() * 1000);
      }
    }
  }

  @Test
  void configMapFallbackShare_cannotOverAdmitAtTheHpaMaximum() {
    HorizontalPodAutoscaler hpa =
        (HorizontalPodAutoscaler)
            KubeYaml.toModel(KubeYaml.documents(HA.resolve("hpa-patch.yaml")).get(0));
    ReplicaPolicy.PoolMode replicas = MeshManifestsTest.shippedPolicy().replicas().defaults();
    if (replicas.storeDown() == ReplicaPolicy.StoreDown.FALLBACK) {
      assertThat(replicas.expectedReplicas())
          .as("expectedReplicas vs the ha HPA's maxReplicas")
          .isGreaterThanOrEqualTo(hpa.getSpec().getMaxReplicas());
    }
  }

  @Test
  void standaloneEnvoy_reachesEveryReplicaThroughTheHeadlessService() throws Exception {
    List<HasMetadata> base = KubernetesManifestsTest.base();
    Service headless =
        base.stream()
            .filter(Service.class::isInstance)
            .map(Service.class::cast)
            .filter(s -> "None".equals(s.getSpec().getClusterIP()))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no headless Service in k8s/base"));
    var grpc =
        headless.getSpec().getPorts().stream()
            .filter(p -> p.getName().equals("grpc"))
            .findFirst()
            .orElseThrow();
    assertThat(headless.getSpec().getPorts())
        .as("only grpc: the ServiceMonitor would scrape http-admin twice")
        .hasSize(1);
    String host = headless.getMetadata().getName() + ".sluice.svc.cluster.local";
    for (String f : List.of("envoy.yaml", "envoy-headers-only.yaml")) {
      Cluster sluice =
          EnvoyBootstrapParser.parseFile(ENVOY_CONFIG.resolve(f))
              .getStaticResources()
              .getClustersList()
              .stream()
              .filter(c -> c.getName().equals("sluice"))
              .findFirst()
              .orElseThrow();
      assertThat(sluice.getType()).as(f).isEqualTo(Cluster.DiscoveryType.STRICT_DNS);
      assertThat(sluice.getLbPolicy()).as(f).isEqualTo(Cluster.LbPolicy.LEAST_REQUEST);
      SocketAddress a =
          sluice
              .getLoadAssignment()
              .getEndpoints(0)
              .getLbEndpoints(0)
              .getEndpoint()
              .getAddress()
              .getSocketAddress();
      assertThat(a.getAddress()).as(f).isEqualTo(host);
      assertThat(a.getPortValue()).as(f).isEqualTo(grpc.getPort());
    }
  }

  @Test
  void configMapPolicy_differsFromTheEmbeddedDefaultOnlyWhereListed() {
    Map<String, String> diff = new TreeMap<>();
    diff(
        "",
        ConfigWriter.tree(ConfigLoader.embeddedDefault()),
        ConfigWriter.tree(MeshManifestsTest.shippedPolicy()),
        diff);
    Map<String, String> unexplained = new TreeMap<>();
    diff.forEach(
        (path, what) -> {
          if (CONFIG_MAP_DIFFERENCES.keySet().stream()
              .noneMatch(p -> path.equals(p) || path.startsWith(p + "."))) {
            unexplained.put(path, what);
          }
        });
    assertThat(unexplained)
        .as("ConfigMap differences without a reason in CONFIG_MAP_DIFFERENCES")
        .isEmpty();
    Set<String> stale = new java.util.TreeSet<>();
    for (String listed : CONFIG_MAP_DIFFERENCES.keySet()) {
      if (diff.keySet().stream().noneMatch(p -> p.equals(listed) || p.startsWith(listed + "."))) {
        stale.add(listed);
      }
    }
    assertThat(stale).as("listed differences that no longer differ").isEmpty();
  }

  /** Leaf paths (a.b.c, lists as a.b[i]) where the two trees differ, with both values. */
  static void diff(String at, JsonNode a, JsonNode b, Map<String, String> out) {
    if (a != null && b != null && a.isObject() && b.isObject()) {
      Set<String> keys = new java.util.TreeSet<>();
      a.fieldNames().forEachRemaining(keys::add);
      b.fieldNames().forEachRemaining(keys::add);
      for (String k : keys) {
        diff(at.isEmpty() ? k : at + "." + k, a.get(k), b.get(k), out);
      }
    } else if (a != null && b != null && a.isArray() && b.isArray() && a.size() == b.size()) {
      for (int i = 0; i < a.size(); i++) {
        diff(at + "[" + i + "]", a.get(i), b.get(i), out);
      }
    } else if (a == null || !a.equals(b)) {
      out.put(at, "embedded default " + a + ", ConfigMap " + b);
    }
  }

  @Test
  void diff_findsAChangedLeaf() {
    Map<String, String> out = new TreeMap<>();
    var m = new com.fasterxml.jackson.databind.ObjectMapper();
    diff(
        "",
        m.valueToTree(Map.of("a", Map.of("b", 1, "c", List.of(1, 2)))),
        m.valueToTree(Map.of("a", Map.of("b", 1, "c", List.of(1, 3)))),
        out);
    assertThat(out).containsOnlyKeys("a.c[1]");
  }

  @Test
  void configMap_isTheOneInBase() {
    ConfigMap map =
        KubernetesManifestsTest.find(
            KubernetesManifestsTest.base(), ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    assertThat(map.getData()).containsKey(SluiceDeploymentContract.CONFIG_KEY);
  }
}
