package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.Any;
import com.google.protobuf.Struct;
import io.envoyproxy.envoy.config.accesslog.v3.AccessLog;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.extensions.access_loggers.stream.v3.StdoutAccessLog;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The shipped Istio EnvoyFilters add the access log line that joins Sluice's decision record
 * (docs/telemetry.md, "Joining Envoy's access log"): parsed into Envoy's protos, its JSON format is
 * envoy-config/envoy.yaml's, field for field, and prints Envoy's request id, the trace id and
 * Sluice's dynamic metadata.
 */
class IstioAccessLogTest {

  @ParameterizedTest
  @ValueSource(strings = {"sluice-gateway.yaml", "sluice-sidecar-inbound.yaml"})
  void istioAccessLog_isEnvoyYamlsJoinFormat(String file) throws Exception {
    List<Struct> formats = new ArrayList<>();
    for (JsonNode doc : KubeYaml.documents(MeshManifestsTest.ISTIO.resolve(file))) {
      for (JsonNode patch : doc.path("spec").path("configPatches")) {
        if (!patch.path("applyTo").asText().equals("NETWORK_FILTER")) {
          continue;
        }
        assertThat(patch.at("/match/listener/filterChain/filter/name").asText())
            .isEqualTo("envoy.filters.network.http_connection_manager");
        assertThat(patch.at("/patch/operation").asText()).isEqualTo("MERGE");
        Filter f = (Filter) MeshManifestsTest.parsePatchValue(patch);
        formats.addAll(formats(f.getTypedConfig().unpack(HttpConnectionManager.class)));
      }
    }
    Struct envoyYamls = envoyYamlFormat();
    assertThat(formats).as(file + ": one Sluice access log").hasSize(1);
    assertThat(formats.get(0)).as(file).isEqualTo(envoyYamls);
    assertThat(formats.get(0).getFieldsMap())
        .as(file)
        .containsKeys("request_id", "trace_id", "sluice_decision", "sluice_reason");
    assertThat(formats.get(0).getFieldsOrThrow("request_id").getStringValue())
        .isEqualTo("%REQ(X-REQUEST-ID)%");
    assertThat(formats.get(0).getFieldsOrThrow("trace_id").getStringValue())
        .isEqualTo("%TRACE_ID%");
    assertThat(formats.get(0).getFieldsOrThrow("sluice_decision").getStringValue())
        .isEqualTo("%DYNAMIC_METADATA(sluice:decision)%");
  }

  /** The JSON format of envoy.yaml's stdout access log. */
  private static Struct envoyYamlFormat() throws Exception {
    Bootstrap b =
        EnvoyBootstrapParser.parseFile(
            MeshManifestsTest.ENVOY_CONFIG.resolve(Path.of("envoy.yaml")));
    List<Struct> out = new ArrayList<>();
    for (Any any : EnvoyBootstrapParser.allAnys(b)) {
      if (any.is(HttpConnectionManager.class)) {
        out.addAll(formats(any.unpack(HttpConnectionManager.class)));
      }
    }
    assertThat(out).as("envoy.yaml's access logs").hasSize(1);
    return out.get(0);
  }

  private static List<Struct> formats(HttpConnectionManager hcm) throws Exception {
    List<Struct> out = new ArrayList<>();
    for (AccessLog log : hcm.getAccessLogList()) {
      if (log.getTypedConfig().is(StdoutAccessLog.class)) {
        out.add(log.getTypedConfig().unpack(StdoutAccessLog.class).getLogFormat().getJsonFormat());
      }
    }
    return out;
  }
}
