package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.marcnuri.helm.Helm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Helm chart ({@code deploy/helm/sluice}) rendered by Helm's own engine (helm-java: Helm's Go
 * library through JNA, no {@code helm} binary) equals the kustomize render of the same shape
 * ({@code kubectl kustomize k8s/overlays/<shape>}, as {@link KubernetesManifestsTest} renders it;
 * skipped where no kubectl or kustomize is on the PATH), object by object. Two differences are
 * normalised, both kustomize's own: the secretGenerator's content-hash suffix on the Redis Secret's
 * name (and the Deployment's reference to it), and the order of a container's env entries (a
 * strategic merge patch appends; the chart appends in the same place, but order carries no
 * meaning).
 */
class HelmChartTest {
  static final Path CHART =
      Path.of(System.getProperty("user.dir")).resolve("../deploy/helm/sluice").normalize();

  /** kustomize's secretGenerator suffix: a dash and ten characters of the content hash. */
  static final Pattern HASHED = Pattern.compile("^(sluice-redis)-[a-z0-9]{10}$");

  static List<JsonNode> helm(String shape) {
    String out =
        new Helm(CHART)
            .template()
            .withName("sluice")
            .withValuesFile(CHART.resolve("values-" + shape + ".yaml"))
            .call();
    return KubeYaml.documents(out);
  }

  static List<JsonNode> kustomize(String shape) throws Exception {
    return KubeYaml.documents(
        KubernetesManifestsTest.renderYaml(
            KubernetesManifestsTest.K8S.resolve("overlays/" + shape)));
  }

  /** kind/name to the object, normalised as the class comment says. */
  static Map<String, JsonNode> byKey(List<JsonNode> docs) {
    Map<String, JsonNode> out = new TreeMap<>();
    for (JsonNode d : docs) {
      ObjectNode o = d.deepCopy();
      ObjectNode md = (ObjectNode) o.path("metadata");
      md.put("name", HASHED.matcher(md.path("name").asText()).replaceAll("$1"));
      if (o.path("kind").asText().equals("Deployment")) {
        for (JsonNode c : o.at("/spec/template/spec/containers")) {
          List<JsonNode> env = new ArrayList<>();
          c.path("env").forEach(env::add);
          for (JsonNode e : env) {
            JsonNode ref = e.at("/valueFrom/secretKeyRef");
            if (ref.isObject()) {
              ((ObjectNode) ref)
                  .put("name", HASHED.matcher(ref.path("name").asText()).replaceAll("$1"));
            }
          }
          env.sort(Comparator.comparing(e -> e.path("name").asText()));
          ((ObjectNode) c).putArray("env").addAll(env);
        }
      }
      out.put(o.path("kind").asText() + "/" + md.path("name").asText(), o);
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"single", "ha"})
  void chart_rendersTheSameObjectsAsTheKustomizeOverlay(String shape) throws Exception {
    Map<String, JsonNode> kustomized = byKey(kustomize(shape));
    Map<String, JsonNode> charted = byKey(helm(shape));
    assertThat(charted.keySet()).isEqualTo(kustomized.keySet());
    charted.forEach(
        (key, o) -> assertThat(o).as(shape + ": " + key).isEqualTo(kustomized.get(key)));
  }

  @Test
  void chart_shapesDiffer_whereTheOverlaysDo() {
    Map<String, JsonNode> single = byKey(helm("single"));
    Map<String, JsonNode> ha = byKey(helm("ha"));
    assertThat(single).doesNotContainKeys("PodDisruptionBudget/sluice", "Secret/sluice-redis");
    assertThat(ha).containsKeys("PodDisruptionBudget/sluice", "HorizontalPodAutoscaler/sluice");
    assertThat(single.get("Deployment/sluice").at("/spec/replicas").asInt()).isEqualTo(1);
    assertThat(ha.get("Deployment/sluice").at("/spec/replicas").asInt()).isEqualTo(3);
  }

  @Test
  void chartYaml_isAHelm3ApplicationChart_publishableToOci() throws Exception {
    JsonNode chart = KubeYaml.documents(CHART.resolve("Chart.yaml")).get(0);
    assertThat(chart.path("apiVersion").asText()).isEqualTo("v2"); // OCI push needs Helm 3
    assertThat(chart.path("name").asText()).isEqualTo("sluice");
    assertThat(chart.path("type").asText()).isEqualTo("application");
    assertThat(chart.path("version").asText()).matches("\\d+\\.\\d+\\.\\d+"); // SemVer 2
    // files/base is k8s/base itself: one source for both renderers
    assertThat(
            Files.isSameFile(
                CHART.resolve("files/base"), KubernetesManifestsTest.K8S.resolve("base")))
        .isTrue();
  }
}
