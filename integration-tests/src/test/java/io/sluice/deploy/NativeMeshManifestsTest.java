package io.sluice.deploy;

import static io.sluice.deploy.MeshManifestsTest.EG;
import static io.sluice.deploy.MeshManifestsTest.EXT_PROC;
import static io.sluice.deploy.MeshManifestsTest.ISTIO;
import static io.sluice.deploy.MeshManifestsTest.KINDS;
import static io.sluice.deploy.MeshManifestsTest.assertOnlyKeys;
import static io.sluice.deploy.MeshManifestsTest.byKind;
import static io.sluice.deploy.MeshManifestsTest.parsePatchValue;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.sluice.config.NativeMetadata;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The headers-only variants with Envoy's native AI metadata for Istio and Envoy Gateway ({@code
 * envoy-config/istio/headers-only-native/}, {@code
 * envoy-config/envoy-gateway/headers-only-native/}; docs/envoy.md "Three modes and what they
 * cost"): every patch value parses into Envoy's protos (the strict parser of {@link
 * MeshManifestsTest}), ext_proc sends no request body, streams the response and forwards the two
 * namespaces Sluice's {@code nativeMetadata} section reads by default; each variant is its buffered
 * sibling but for the request body mode; and the buffered siblings forward the same two namespaces
 * (the cross-check against the body once Envoy's AI filters run on the route).
 */
class NativeMeshManifestsTest {
  static final Path ISTIO_NATIVE = ISTIO.resolve("headers-only-native");
  static final Path EG_NATIVE = EG.resolve("headers-only-native");
  static final List<String> AI_NAMESPACES =
      List.of(NativeMetadata.REQUEST_INFO_NAMESPACE, NativeMetadata.TOKEN_USAGE_NAMESPACE);

  @ParameterizedTest
  @ValueSource(strings = {"sluice-gateway.yaml", "sluice-sidecar-inbound.yaml"})
  void istio_extProcHeadersOnly_forwardsTheAiNamespacesTyped_andParses(String name)
      throws Exception {
    List<JsonNode> docs = KubeYaml.documents(ISTIO_NATIVE.resolve(name));
    for (JsonNode doc : docs) {
      assertThat(KINDS).containsKey(doc.path("apiVersion").asText());
      assertThat(KINDS.get(doc.path("apiVersion").asText())).contains(doc.path("kind").asText());
    }
    JsonNode filter = byKind(docs, "EnvoyFilter");
    ExternalProcessor extProc = null;
    for (JsonNode patch : filter.path("spec").path("configPatches")) {
      var parsed = parsePatchValue(patch);
      EnvoyBootstrapParser.allAnys(parsed).forEach(EnvoyBootstrapParser::unpack);
      if (parsed instanceof HttpFilter f && f.getName().equals(EXT_PROC)) {
        extProc = f.getTypedConfig().unpack(ExternalProcessor.class);
      }
    }
    assertThat(extProc).as(name + ": ext_proc patched in").isNotNull();
    assertThat(extProc.getProcessingMode().getRequestBodyMode()).isEqualTo(BodySendMode.NONE);
    assertThat(extProc.getProcessingMode().getResponseBodyMode()).isEqualTo(BodySendMode.STREAMED);
    assertThat(extProc.getFailureModeAllow()).isFalse();
    assertThat(extProc.getMetadataOptions().getForwardingNamespaces().getTypedList())
        .containsExactlyInAnyOrderElementsOf(AI_NAMESPACES);
    assertThat(extProc.getMetadataOptions().getReceivingNamespaces().getUntypedList())
        .contains("sluice");
  }

  @ParameterizedTest
  @ValueSource(strings = {"sluice-gateway.yaml", "sluice-sidecar-inbound.yaml"})
  void istio_theBufferedSibling_butForTheRequestBodyMode(String name) {
    List<JsonNode> variant = KubeYaml.documents(ISTIO_NATIVE.resolve(name));
    List<JsonNode> sibling = KubeYaml.documents(ISTIO.resolve(name));
    assertThat(variant).hasSameSizeAs(sibling);
    for (int i = 0; i < variant.size(); i++) {
      assertThat(withoutNativeFields(variant.get(i)))
          .as(name + " document " + i)
          .isEqualTo(withoutNativeFields(sibling.get(i)));
    }
  }

  @Test
  void envoyGateway_requestHeadersOnly_streamedResponse_aiNamespacesAccessible() {
    List<JsonNode> docs = KubeYaml.documents(EG_NATIVE.resolve("sluice-extension-policy.yaml"));
    JsonNode extProc = byKind(docs, "EnvoyExtensionPolicy").at("/spec/extProc/0");
    assertOnlyKeys(
        extProc.path("processingMode"), Set.of("request", "response", "allowModeOverride"), EG);
    // ext_proc_types.go: a present `request` sends the headers; no `body` is NONE
    assertThat(extProc.at("/processingMode/request").isObject()).isTrue();
    assertOnlyKeys(extProc.at("/processingMode/request"), Set.of("attributes"), EG);
    assertThat(extProc.at("/processingMode/response/body").asText()).isEqualTo("Streamed");
    assertOnlyKeys(
        extProc.path("metadata"), Set.of("accessibleNamespaces", "writableNamespaces"), EG);
    List<String> accessible = new java.util.ArrayList<>();
    extProc.at("/metadata/accessibleNamespaces").forEach(n -> accessible.add(n.asText()));
    assertThat(accessible).containsAll(AI_NAMESPACES).contains("envoy.filters.http.jwt_authn");
    assertThat(extProc.path("failOpen").asBoolean(true)).isFalse();

    List<JsonNode> sibling = KubeYaml.documents(EG.resolve("sluice-extension-policy.yaml"));
    assertThat(docs).hasSameSizeAs(sibling);
    for (int i = 0; i < docs.size(); i++) {
      JsonNode a = docs.get(i).deepCopy();
      JsonNode b = sibling.get(i).deepCopy();
      for (JsonNode d : List.of(a, b)) {
        JsonNode e = d.at("/spec/extProc/0");
        if (e instanceof ObjectNode o) {
          ((ObjectNode) o.path("processingMode")).remove("request");
        }
      }
      assertThat(a).as("document " + i).isEqualTo(b);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sluice-gateway.yaml", "sluice-sidecar-inbound.yaml"})
  void istio_theBufferedFilter_forwardsTheAiNamespacesTyped(String name) throws Exception {
    ExternalProcessor extProc = null;
    for (JsonNode patch :
        byKind(KubeYaml.documents(ISTIO.resolve(name)), "EnvoyFilter")
            .path("spec")
            .path("configPatches")) {
      if (parsePatchValue(patch) instanceof HttpFilter f && f.getName().equals(EXT_PROC)) {
        extProc = f.getTypedConfig().unpack(ExternalProcessor.class);
      }
    }
    assertThat(extProc).as(name + ": ext_proc patched in").isNotNull();
    assertThat(extProc.getProcessingMode().getRequestBodyMode()).isEqualTo(BodySendMode.BUFFERED);
    assertThat(extProc.getMetadataOptions().getForwardingNamespaces().getTypedList())
        .containsExactlyInAnyOrderElementsOf(AI_NAMESPACES);
  }

  @Test
  void envoyGateway_theBufferedPolicy_forwardsTheAiNamespaces() {
    JsonNode extProc =
        byKind(
                KubeYaml.documents(EG.resolve("sluice-extension-policy.yaml")),
                "EnvoyExtensionPolicy")
            .at("/spec/extProc/0");
    assertThat(extProc.at("/processingMode/request/body").asText()).isEqualTo("Buffered");
    List<String> accessible = new java.util.ArrayList<>();
    extProc.at("/metadata/accessibleNamespaces").forEach(n -> accessible.add(n.asText()));
    assertThat(accessible).containsAll(AI_NAMESPACES).contains("envoy.filters.http.jwt_authn");
  }

  /** A document with ext_proc's request body mode removed. */
  private static JsonNode withoutNativeFields(JsonNode doc) {
    JsonNode d = doc.deepCopy();
    for (JsonNode patch : d.path("spec").path("configPatches")) {
      JsonNode tc = patch.at("/patch/value/typed_config");
      if (patch.at("/patch/value/name").asText().equals(EXT_PROC) && tc instanceof ObjectNode o) {
        ((ObjectNode) o.path("processing_mode")).remove("request_body_mode");
      }
    }
    return d;
  }
}
