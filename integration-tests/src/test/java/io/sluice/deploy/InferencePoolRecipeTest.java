package io.sluice.deploy;

import static io.sluice.deploy.MeshManifestsTest.assertOnlyKeys;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.config.ConfigLoader;
import io.sluice.config.LlmdInterop;
import io.sluice.config.LlmdSection;
import io.sluice.config.SluiceConfig;
import io.sluice.config.TrustedHeaders;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The InferencePool recipe ({@code envoy-config/envoy-gateway/inference-pool/}): every document
 * checked against the fields of its API — the Inference Extension's CRDs by their OpenAPI schema as
 * published (no Java model of them exists on Maven Central), Envoy Gateway's kinds as {@link
 * MeshManifestsTest} checks them —, the pieces wired to each other (route to pool, policies to
 * route, objectives to pool), and Sluice's policy beside it loaded and agreeing with the
 * InferenceObjectives' names and priorities.
 */
class InferencePoolRecipeTest {
  static final Path DIR = MeshManifestsTest.EG.resolve("inference-pool");
  static final Path RECIPE = DIR.resolve("sluice-inference-pool.yaml");
  static final Path POLICY = DIR.resolve("sluice-policy-llm-d.yaml");

  /**
   * A structural schema: the keys an object may have (with their own schema), the required ones,
   * the values an enum takes, or "integer"/"string" for a leaf; {@code items} for a list.
   */
  record Schema(
      String type,
      Map<String, Schema> properties,
      Set<String> required,
      Set<String> enumValues,
      Schema items) {
    static Schema object(Map<String, Schema> p, String... required) {
      return new Schema("object", p, Set.of(required), Set.of(), null);
    }

    static Schema map() { // additionalProperties of strings (matchLabels)
      return new Schema("map", Map.of(), Set.of(), Set.of(), null);
    }

    static Schema leaf(String type, String... enumValues) {
      return new Schema(type, Map.of(), Set.of(), Set.of(enumValues), null);
    }

    static Schema list(Schema items, int maxItems) {
      return new Schema("array:" + maxItems, Map.of(), Set.of(), Set.of(), items);
    }

    void check(JsonNode n, String where) {
      switch (type.split(":")[0]) {
        case "object" -> {
          assertThat(n.isObject()).as(where + ": an object").isTrue();
          assertOnlyKeys(n, properties.keySet(), where);
          for (String r : required) {
            assertThat(n.has(r)).as(where + "." + r + ": required").isTrue();
          }
          properties.forEach(
              (k, s) -> {
                if (n.has(k)) {
                  s.check(n.get(k), where + "." + k);
                }
              });
        }
        case "map" -> {
          assertThat(n.isObject()).as(where).isTrue();
          n.properties().forEach(e -> assertThat(e.getValue().isTextual()).as(where).isTrue());
        }
        case "array" -> {
          assertThat(n.isArray()).as(where + ": a list").isTrue();
          assertThat(n.size())
              .as(where + ": items")
              .isBetween(1, Integer.parseInt(type.split(":")[1]));
          for (int i = 0; i < n.size(); i++) {
            items.check(n.get(i), where + "[" + i + "]");
          }
        }
        case "integer" ->
            assertThat(n.canConvertToInt() && n.isIntegralNumber()).as(where).isTrue();
        default -> {
          assertThat(n.isTextual()).as(where + ": a string").isTrue();
          if (!enumValues.isEmpty()) {
            assertThat(enumValues).as(where).contains(n.asText());
          }
        }
      }
    }
  }

  static final Schema PORT = Schema.object(Map.of("number", Schema.leaf("integer")), "number");

  /**
   * InferencePool v1 spec (gateway-api-inference-extension v1.0,
   * config/crd/bases/inference.networking.k8s.io_inferencepools.yaml): selector.matchLabels,
   * targetPorts (exactly one), endpointPickerRef (group, kind, name, port, failureMode).
   */
  static final Schema INFERENCE_POOL_SPEC =
      Schema.object(
          Map.of(
              "selector",
              Schema.object(Map.of("matchLabels", Schema.map()), "matchLabels"),
              "targetPorts",
              Schema.list(PORT, 1),
              "endpointPickerRef",
              Schema.object(
                  Map.of(
                      "group", Schema.leaf("string"),
                      "kind", Schema.leaf("string"),
                      "name", Schema.leaf("string"),
                      "port", PORT,
                      "failureMode", Schema.leaf("string", "FailOpen", "FailClose")),
                  "name")),
          "selector",
          "targetPorts",
          "endpointPickerRef");

  /** InferenceObjective v1alpha2 spec: priority, poolRef (group, kind, name). */
  static final Schema INFERENCE_OBJECTIVE_SPEC =
      Schema.object(
          Map.of(
              "priority",
              Schema.leaf("integer"),
              "poolRef",
              Schema.object(
                  Map.of(
                      "group", Schema.leaf("string"),
                      "kind", Schema.leaf("string", "InferencePool"),
                      "name", Schema.leaf("string")),
                  "name")),
          "poolRef");

  static final Map<String, Schema> SPECS =
      Map.of(
          "InferencePool", INFERENCE_POOL_SPEC,
          "InferenceObjective", INFERENCE_OBJECTIVE_SPEC);

  static final Map<String, String> API_VERSIONS =
      Map.of(
          "InferencePool", "inference.networking.k8s.io/v1",
          "InferenceObjective", "inference.networking.x-k8s.io/v1alpha2",
          "HTTPRoute", "gateway.networking.k8s.io/v1",
          "EnvoyExtensionPolicy", "gateway.envoyproxy.io/v1alpha1",
          "SecurityPolicy", "gateway.envoyproxy.io/v1alpha1");

  static List<JsonNode> docs() {
    return KubeYaml.documents(RECIPE);
  }

  static List<JsonNode> ofKind(String kind) {
    return docs().stream().filter(d -> d.path("kind").asText().equals(kind)).toList();
  }

  @Test
  void everyDocument_isAKnownKind_andTheInferenceCrdsMatchTheirSchema() {
    assertThat(docs()).hasSizeGreaterThanOrEqualTo(6);
    for (JsonNode d : docs()) {
      String kind = d.path("kind").asText();
      assertThat(API_VERSIONS).as("kind").containsKey(kind);
      assertThat(d.path("apiVersion").asText()).as(kind).isEqualTo(API_VERSIONS.get(kind));
      assertThat(d.at("/metadata/name").asText()).isNotBlank();
      assertThat(d.at("/metadata/namespace").asText()).isEqualTo("default");
      if (SPECS.containsKey(kind)) {
        SPECS.get(kind).check(d.path("spec"), kind + " " + d.at("/metadata/name").asText());
      }
    }
  }

  @Test
  void schemaCheck_catchesAMisspelledFieldAWrongEnumAndAMissingRequiredOne() throws Exception {
    JsonNode pool = ofKind("InferencePool").get(0).path("spec");
    ObjectNode typo = pool.deepCopy();
    typo.set("extensionRef", typo.remove("endpointPickerRef")); // the pre-v1 name
    assertThatThrownBy(() -> INFERENCE_POOL_SPEC.check(typo, "typo"))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("extensionRef");
    ObjectNode badMode = pool.deepCopy();
    ((ObjectNode) badMode.path("endpointPickerRef")).put("failureMode", "FailOpn");
    assertThatThrownBy(() -> INFERENCE_POOL_SPEC.check(badMode, "mode"))
        .isInstanceOf(AssertionError.class);
    ObjectNode twoPorts = pool.deepCopy();
    twoPorts.withArray("targetPorts").addObject().put("number", 8001);
    assertThatThrownBy(() -> INFERENCE_POOL_SPEC.check(twoPorts, "ports"))
        .isInstanceOf(AssertionError.class);
  }

  @Test
  void routeSendsToThePool_objectivesNameIt_sluiceAndIdentityPoliciesTargetTheRoute() {
    JsonNode pool = ofKind("InferencePool").get(0);
    String poolName = pool.at("/metadata/name").asText();
    JsonNode route = ofKind("HTTPRoute").get(0);
    JsonNode backend = route.at("/spec/rules/0/backendRefs/0");
    assertThat(backend.path("kind").asText()).isEqualTo("InferencePool");
    assertThat(backend.path("group").asText()).isEqualTo("inference.networking.k8s.io");
    assertThat(backend.path("name").asText()).isEqualTo(poolName);
    assertThat(route.at("/spec/parentRefs/0/name").asText()).isEqualTo("eg");
    for (JsonNode o : ofKind("InferenceObjective")) {
      assertThat(o.at("/spec/poolRef/name").asText()).isEqualTo(poolName);
    }
    String routeName = route.at("/metadata/name").asText();
    for (String kind : List.of("EnvoyExtensionPolicy", "SecurityPolicy")) {
      JsonNode target = ofKind(kind).get(0).at("/spec/targetRefs/0");
      assertThat(target.path("kind").asText()).as(kind).isEqualTo("HTTPRoute");
      assertThat(target.path("name").asText()).as(kind).isEqualTo(routeName);
    }
  }

  @Test
  void sluiceOnTheRoute_hasTheShippedGatewayPolicysSettings_andIsItsOnlyProcessor()
      throws Exception {
    JsonNode shipped =
        MeshManifestsTest.byKind(
                KubeYaml.documents(MeshManifestsTest.EG.resolve("sluice-extension-policy.yaml")),
                "EnvoyExtensionPolicy")
            .at("/spec/extProc");
    JsonNode here = ofKind("EnvoyExtensionPolicy").get(0).at("/spec/extProc");
    // one processor, Sluice: the picker's ext_proc is not ours to declare; the gateway's
    // InferencePool support appends it right before the router, after this policy's filter
    assertThat(here).hasSize(1);
    assertThat(here).isEqualTo(shipped);
  }

  @Test
  void identityPolicy_setsLlmdHeadersFromClaims_andTheyAreOnTheStripList() {
    JsonNode provider = ofKind("SecurityPolicy").get(0).at("/spec/jwt/providers/0");
    Map<String, String> claims = new HashMap<>();
    provider
        .path("claimToHeaders")
        .forEach(c -> claims.put(c.path("header").asText(), c.path("claim").asText()));
    assertThat(claims)
        .containsEntry(LlmdInterop.FAIRNESS_ID_HEADER, "tenant")
        .containsEntry(LlmdInterop.OBJECTIVE_HEADER, "objective");
    assertThat(TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS)
        .contains(LlmdInterop.FAIRNESS_ID_HEADER, LlmdInterop.OBJECTIVE_HEADER);
  }

  @Test
  void sluicePolicy_loads_trustsNothingUnstripped_andMapsEveryObjectiveByItsPriority()
      throws Exception {
    SluiceConfig c = ConfigLoader.parse(Files.readString(POLICY));
    assertThat(TrustedHeaders.warnings(c)).isEmpty();
    assertThat(io.sluice.config.TenantSignals.warnings(c)).isEmpty();
    LlmdInterop l = c.section(LlmdSection.SECTION);
    assertThat(l.droppedReasonHeader()).isTrue();
    JsonNode raw =
        new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
            .readTree(POLICY.toFile())
            .at("/llmD/objectives");
    for (JsonNode o : ofKind("InferenceObjective")) {
      String name = o.at("/metadata/name").asText();
      int priority = o.at("/spec/priority").asInt();
      assertThat(raw.at("/" + name + "/priority").asInt(Integer.MIN_VALUE))
          .as("llmD.objectives." + name + ".priority as in its InferenceObjective")
          .isEqualTo(priority);
      assertThat(l.classOf(name))
          .as(name)
          .isEqualTo(LlmdInterop.classForPriority(l.priorityClasses(), priority));
    }
    assertThat(l.classOf("premium-traffic")).isEqualTo("interactive");
    assertThat(l.classOf("sheddable")).isEqualTo("batch");
  }
}
