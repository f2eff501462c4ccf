package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Any;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Parses every manifest under {@code k8s/} with fabric8's Kubernetes model (unknown fields fail)
 * and checks the contract with Sluice's server ({@link SluiceDeploymentContract}). Overlays are
 * checked two ways: their patches must target base resources (always), and, where {@code kubectl}
 * or {@code kustomize} is on the PATH, the rendered overlay must pass the whole contract too.
 */
class KubernetesManifestsTest {

  static final Path K8S = Path.of(System.getProperty("user.dir")).resolve("../k8s").normalize();
  static final Path BASE = K8S.resolve("base");

  static Stream<Path> manifestFiles() throws IOException {
    try (Stream<Path> files = Files.walk(K8S)) {
      List<Path> list =
          files
              .filter(p -> p.toString().endsWith(".yaml"))
              .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
              // promtool's rule unit tests (k8s/tests/*.test.yaml) are not Kubernetes objects
              .filter(p -> !p.getFileName().toString().endsWith(".test.yaml"))
              .sorted()
              .toList();
      assertThat(list).hasSizeGreaterThan(10);
      return list.stream();
    }
  }

  @ParameterizedTest
  @MethodSource("manifestFiles")
  void manifest_everyDocument_parsesStrictly(Path file) {
    List<JsonNode> docs = KubeYaml.documents(file);
    assertThat(docs).as(file.toString()).isNotEmpty();
    for (JsonNode doc : docs) {
      ObjectNode copy = doc.deepCopy();
      copy.remove("$patch"); // kustomize's delete directive in overlay patches
      HasMetadata parsed = KubeYaml.toModel(copy);
      assertThat(parsed.getMetadata().getName()).as(file.toString()).isNotBlank();
    }
  }

  @Test
  void base_kustomization_listsEveryManifestInTheDirectory() throws IOException {
    JsonNode kustomization = kustomization(BASE);
    Set<String> listed = new TreeSet<>();
    kustomization.path("resources").forEach(r -> listed.add(r.asText()));
    Set<String> present;
    try (Stream<Path> files = Files.list(BASE)) {
      present =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".yaml") && !n.equals("kustomization.yaml"))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertThat(listed).isEqualTo(present);
    assertThat(kustomization.path("namespace").asText()).isEqualTo("sluice");
  }

  @Test
  void redis_appendOnlyFileOn_flushedEverySecond_onAPersistentVolume() throws Exception {
    Path dir = K8S.resolve("redis");
    JsonNode kustomization = kustomization(dir);
    Set<String> listed = new TreeSet<>();
    kustomization.path("resources").forEach(r -> listed.add(r.asText()));
    assertThat(listed)
        .containsExactlyInAnyOrder(
            "namespace.yaml", "configmap.yaml", "statefulset.yaml", "service.yaml");
    ConfigMap config =
        (ConfigMap) KubeYaml.toModel(KubeYaml.documents(dir.resolve("configmap.yaml")).get(0));
    List<String> conf = config.getData().get("redis.conf").lines().map(String::strip).toList();
    assertThat(conf).contains("appendonly yes", "appendfsync everysec", "dir /data");
    var set =
        (io.fabric8.kubernetes.api.model.apps.StatefulSet)
            KubeYaml.toModel(KubeYaml.documents(dir.resolve("statefulset.yaml")).get(0));
    Container redis = set.getSpec().getTemplate().getSpec().getContainers().get(0);
    assertThat(redis.getCommand()).containsExactly("redis-server", "/etc/redis/redis.conf");
    assertThat(redis.getVolumeMounts())
        .anyMatch(m -> m.getMountPath().equals("/data") && m.getName().equals("data"));
    assertThat(set.getSpec().getVolumeClaimTemplates())
        .anyMatch(c -> c.getMetadata().getName().equals("data"));
    // the ha overlay's default REDIS_URL names this Service in this namespace
    assertThat(Files.readString(K8S.resolve("overlays/ha/redis.env")))
        .contains(
            set.getMetadata().getName()
                + "."
                + kustomization.path("namespace").asText()
                + ".svc.cluster.local:6379");
  }

  @Test
  void base_contract_holds() {
    assertThat(SluiceDeploymentContract.violations(base())).isEmpty();
  }

  @Test
  void base_policyQueueHold_matchesEnvoysMaxMessageTimeout() throws Exception {
    ConfigMap map = find(base(), ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    var config = io.sluice.config.ConfigLoader.parse(map.getData().get("sluice.yaml"));
    var bootstrap = EnvoyBootstrapParser.parseFile(K8S.resolveSibling("envoy-config/envoy.yaml"));
    ExternalProcessor extProc = null;
    for (Any any : EnvoyBootstrapParser.allAnys(bootstrap)) {
      if (any.is(ExternalProcessor.class)) {
        extProc = any.unpack(ExternalProcessor.class);
      }
    }
    assertThat(extProc).isNotNull();
    java.time.Duration envoyMax =
        java.time.Duration.ofSeconds(extProc.getMaxMessageTimeout().getSeconds());
    // Queue-hold is on per stream where Envoy says how long it may last (envoy.yaml's initial
    // metadata), never longer than Envoy lets a hold last, and off where it cannot say (Envoy
    // Gateway: no max_message_timeout, the pools' own value is 0).
    assertThat(config.pools().values())
        .allSatisfy(pool -> assertThat(pool.maxMessageTimeout()).isZero());
    var hold =
        extProc.getGrpcService().getInitialMetadataList().stream()
            .filter(h -> h.getKey().equals("x-sluice-max-message-timeout-ms"))
            .findFirst()
            .orElseThrow();
    assertThat(java.time.Duration.ofMillis(Long.parseLong(hold.getValue())))
        .isPositive()
        .isLessThanOrEqualTo(envoyMax);
    assertThat(config.signals().get(io.sluice.config.SluiceConfig.Signal.MAX_MESSAGE_TIMEOUT_MS))
        .contains(new io.sluice.config.SluiceConfig.Source.Metadata(hold.getKey()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"single", "ha"})
  void overlay_patchesAndReplicas_targetBaseResources(String overlay) {
    Path dir = K8S.resolve("overlays").resolve(overlay);
    JsonNode kustomization = kustomization(dir);
    assertThat(kustomization.path("resources").get(0).asText()).isEqualTo("../../base");
    assertThat(kustomization.path("namespace").asText()).isEqualTo("sluice");
    Set<String> baseKeys =
        base().stream()
            .map(r -> r.getKind() + "/" + r.getMetadata().getName())
            .collect(Collectors.toSet());
    assertThat(kustomization.path("patches")).isNotEmpty();
    for (JsonNode patch : kustomization.path("patches")) {
      for (JsonNode doc : KubeYaml.documents(dir.resolve(patch.path("path").asText()))) {
        assertThat(baseKeys).as(patch.toString()).contains(KubeYaml.describe(doc));
      }
    }
    for (JsonNode replicas : kustomization.path("replicas")) {
      assertThat(baseKeys).contains("Deployment/" + replicas.path("name").asText());
    }
  }

  @Test
  void overlaySingle_patches_memoryStoreOneReplicaNoPdbNoHpa() {
    Path dir = K8S.resolve("overlays/single");
    JsonNode k = kustomization(dir);
    assertThat(k.path("replicas").get(0).path("count").asInt()).isEqualTo(1);
    Container c = patchedContainer(dir.resolve("deployment-patch.yaml"));
    assertThat(SluiceDeploymentContract.env(c, "BACKEND_TYPE")).isEqualTo("memory");
    Set<String> deleted = new TreeSet<>();
    for (JsonNode patch : k.path("patches")) {
      for (JsonNode doc : KubeYaml.documents(dir.resolve(patch.path("path").asText()))) {
        if ("delete".equals(doc.path("$patch").asText())) {
          deleted.add(KubeYaml.describe(doc));
        }
      }
    }
    assertThat(deleted)
        .containsExactlyInAnyOrder("PodDisruptionBudget/sluice", "HorizontalPodAutoscaler/sluice");
  }

  @Test
  void overlayHa_patches_redisFromGeneratedSecretThreeReplicasPdbTwo() {
    Path dir = K8S.resolve("overlays/ha");
    JsonNode k = kustomization(dir);
    int replicas = k.path("replicas").get(0).path("count").asInt();
    assertThat(replicas).isEqualTo(3);
    Container c = patchedContainer(dir.resolve("deployment-patch.yaml"));
    assertThat(SluiceDeploymentContract.env(c, "BACKEND_TYPE")).isEqualTo("redis");
    EnvVar url = c.getEnv().stream().filter(e -> e.getName().equals("REDIS_URL")).findFirst().get();
    var ref = url.getValueFrom().getSecretKeyRef();
    JsonNode generator = k.path("secretGenerator").get(0);
    assertThat(ref.getName()).isEqualTo(generator.path("name").asText());
    String envFile = readString(dir.resolve(generator.path("envs").get(0).asText()));
    assertThat(envFile).contains(ref.getKey() + "=");
    PodDisruptionBudget pdb =
        (PodDisruptionBudget)
            KubeYaml.toModel(KubeYaml.documents(dir.resolve("pdb-patch.yaml")).get(0));
    assertThat(pdb.getSpec().getMinAvailable().getIntVal()).isEqualTo(2).isLessThan(replicas);
    HorizontalPodAutoscaler hpa =
        (HorizontalPodAutoscaler)
            KubeYaml.toModel(KubeYaml.documents(dir.resolve("hpa-patch.yaml")).get(0));
    assertThat(hpa.getSpec().getMinReplicas()).isEqualTo(replicas);
    // the policy's fallback share (Redis down) divides each pool by the HPA's maximum, so it
    // cannot over-admit at any replica count the HPA may reach
    ConfigMap map = find(base(), ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    var policy = io.sluice.config.ConfigLoader.parse(map.getData().get("sluice.yaml"));
    assertThat(policy.replicas().defaults().expectedReplicas())
        .isEqualTo(hpa.getSpec().getMaxReplicas());
    assertThat(policy.replicas().defaults().storeDown())
        .isEqualTo(io.sluice.core.share.ReplicaPolicy.StoreDown.FALLBACK);
  }

  @ParameterizedTest
  @ValueSource(strings = {"single", "ha"})
  void renderedOverlay_contract_holds(String overlay) throws Exception {
    List<HasMetadata> rendered = render(K8S.resolve("overlays").resolve(overlay));
    assertThat(SluiceDeploymentContract.violations(rendered)).isEmpty();
    assertThat(rendered)
        .allMatch(
            r ->
                r.getKind().equals("Namespace") || "sluice".equals(r.getMetadata().getNamespace()));
    Deployment d = find(rendered, Deployment.class, "sluice");
    Container c = d.getSpec().getTemplate().getSpec().getContainers().get(0);
    if (overlay.equals("single")) {
      assertThat(d.getSpec().getReplicas()).isEqualTo(1);
      assertThat(SluiceDeploymentContract.env(c, "BACKEND_TYPE")).isEqualTo("memory");
      assertThat(rendered).noneMatch(PodDisruptionBudget.class::isInstance);
      assertThat(rendered).noneMatch(HorizontalPodAutoscaler.class::isInstance);
    } else {
      assertThat(d.getSpec().getReplicas()).isEqualTo(3);
      assertThat(SluiceDeploymentContract.env(c, "BACKEND_TYPE")).isEqualTo("redis");
      assertThat(find(rendered, PodDisruptionBudget.class, "sluice").getSpec().getMinAvailable())
          .isEqualTo(new IntOrString(2));
      var ref =
          c.getEnv().stream()
              .filter(e -> e.getName().equals("REDIS_URL"))
              .findFirst()
              .get()
              .getValueFrom()
              .getSecretKeyRef();
      Secret secret = find(rendered, Secret.class, ref.getName()); // the hashed generated name
      assertThat(secret.getData()).containsKey(ref.getKey());
    }
  }

  // ---- the checks can fail -------------------------------------------------------------------

  @Test
  void strictParse_misspelledField_fails() {
    String yaml =
        """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: sluice}
        spec:
          replicas: 1
          template:
            spec:
              terminationGracePeriod: 45
              containers: [{name: sluice, image: x}]
        """;
    assertThatThrownBy(() -> KubeYaml.toModel(KubeYaml.documents(yaml).get(0)))
        .hasMessageContaining("spec.template.spec.terminationGracePeriod");
  }

  @Test
  void strictParse_misspelledKind_fails() {
    String yaml = "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: sluice}\n";
    assertThatThrownBy(() -> KubeYaml.toModel(KubeYaml.documents(yaml).get(0)))
        .hasMessageContaining("Deploymnet");
  }

  @Test
  void contract_graceNotAboveDrain_reported() {
    List<HasMetadata> resources = base();
    find(resources, Deployment.class, "sluice")
        .getSpec()
        .getTemplate()
        .getSpec()
        .setTerminationGracePeriodSeconds(30L);
    assertThat(SluiceDeploymentContract.violations(resources))
        .anyMatch(v -> v.startsWith("terminationGracePeriodSeconds 30"));
  }

  @Test
  void contract_probeOnUnknownPortOrPath_reported() {
    List<HasMetadata> resources = base();
    Container c =
        find(resources, Deployment.class, "sluice")
            .getSpec()
            .getTemplate()
            .getSpec()
            .getContainers()
            .get(0);
    c.getLivenessProbe().getHttpGet().setPort(new IntOrString("admin"));
    c.getStartupProbe().getHttpGet().setPath("/health");
    assertThat(SluiceDeploymentContract.violations(resources))
        .anyMatch(v -> v.startsWith("livenessProbe: httpGet port"))
        .anyMatch(v -> v.startsWith("startupProbe: path /health"));
  }

  @Test
  void contract_policyPortDiffersFromContainerPort_reported() {
    List<HasMetadata> resources = base();
    ConfigMap map = find(resources, ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    map.getData()
        .put("sluice.yaml", map.getData().get("sluice.yaml").replace("port: 8081", "port: 9000"));
    assertThat(SluiceDeploymentContract.violations(resources))
        .contains("policy server.grpc.port 9000 (expected: 8081)");
  }

  @Test
  void contract_invalidPolicy_reported() {
    List<HasMetadata> resources = base();
    ConfigMap map = find(resources, ConfigMap.class, SluiceDeploymentContract.CONFIG_MAP);
    map.getData()
        .put(
            "sluice.yaml",
            map.getData().get("sluice.yaml").replace("capacity: 32768", "capacty: 32768"));
    assertThat(SluiceDeploymentContract.violations(resources))
        .anyMatch(v -> v.contains("Sluice rejects the policy") && v.contains("capacty"));
  }

  @Test
  void contract_serviceSelectorAndPortName_reported() {
    List<HasMetadata> resources = base();
    Service s = find(resources, Service.class, "sluice");
    s.getSpec().setSelector(Map.of("app", "sluice"));
    s.getSpec().getPorts().get(0).setName("tcp");
    assertThat(SluiceDeploymentContract.violations(resources))
        .contains("Service/sluice: selector does not match the pod labels")
        .contains("Service/sluice: no port named grpc");
  }

  @Test
  void contract_jvmOptionsWithoutExitOnOutOfMemoryError_reported() {
    List<HasMetadata> resources = base();
    var env =
        find(resources, Deployment.class, "sluice")
            .getSpec()
            .getTemplate()
            .getSpec()
            .getContainers()
            .get(0)
            .getEnv();
    env.stream()
        .filter(e -> e.getName().equals("JAVA_TOOL_OPTIONS"))
        .forEach(e -> e.setValue(e.getValue().replace("-XX:+ExitOnOutOfMemoryError", "")));
    assertThat(SluiceDeploymentContract.violations(resources))
        .contains(
            "container sluice: env JAVA_TOOL_OPTIONS (expected: to include"
                + " -XX:+ExitOnOutOfMemoryError)");
  }

  /** The Jib image's own JVM flags exit on OutOfMemoryError (server/pom.xml). */
  @Test
  void image_jibJvmFlags_exitOnOutOfMemoryError() throws Exception {
    var doc =
        javax.xml.parsers.DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(K8S.resolve("../server/pom.xml").normalize().toFile());
    var flags = doc.getElementsByTagName("jvmFlag");
    List<String> values = new java.util.ArrayList<>();
    for (int i = 0; i < flags.getLength(); i++) {
      values.add(flags.item(i).getTextContent().trim());
    }
    assertThat(values).contains("-XX:+ExitOnOutOfMemoryError");
  }

  @Test
  void contract_networkPolicyOpenings_reported() {
    List<HasMetadata> resources = base();
    var np =
        find(
            resources, io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy.class, "sluice");
    var ingress = np.getSpec().getIngress();
    // grpc from every pod of an Envoy namespace, admin from everyone, a rule for every port
    ingress.get(0).getFrom().get(0).setPodSelector(null);
    ingress.get(1).setFrom(List.of());
    ingress.add(new io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule());
    assertThat(SluiceDeploymentContract.violations(resources))
        .anyMatch(v -> v.startsWith("NetworkPolicy/sluice: ingress[0]: grpc peer"))
        .anyMatch(v -> v.startsWith("NetworkPolicy/sluice: ingress[1]: no from"))
        .anyMatch(v -> v.startsWith("NetworkPolicy/sluice: ingress[2]: no ports"));

    List<HasMetadata> without = base();
    without.removeIf(r -> r instanceof io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy);
    assertThat(SluiceDeploymentContract.violations(without))
        .anyMatch(v -> v.startsWith("NetworkPolicy/sluice: missing"));
  }

  @Test
  void contract_writableRootOrRoot_reported() {
    List<HasMetadata> resources = base();
    var pod = find(resources, Deployment.class, "sluice").getSpec().getTemplate().getSpec();
    pod.getSecurityContext().setRunAsNonRoot(false);
    pod.getContainers().get(0).getSecurityContext().setReadOnlyRootFilesystem(null);
    assertThat(SluiceDeploymentContract.violations(resources))
        .contains("pod securityContext.runAsNonRoot (expected: true)")
        .contains("container securityContext.readOnlyRootFilesystem (expected: true)");
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** The base's resources, parsed afresh (tests mutate them). */
  static List<HasMetadata> base() {
    List<HasMetadata> out = new ArrayList<>();
    for (JsonNode r : kustomization(BASE).path("resources")) {
      for (JsonNode doc : KubeYaml.documents(BASE.resolve(r.asText()))) {
        out.add(KubeYaml.toModel(doc));
      }
    }
    return out;
  }

  static JsonNode kustomization(Path dir) {
    return KubeYaml.documents(dir.resolve("kustomization.yaml")).get(0);
  }

  static <T extends HasMetadata> T find(List<HasMetadata> resources, Class<T> type, String name) {
    return resources.stream()
        .filter(type::isInstance)
        .map(type::cast)
        .filter(r -> name.equals(r.getMetadata().getName()))
        .findFirst()
        .orElseThrow(() -> new AssertionError(type.getSimpleName() + "/" + name + " missing"));
  }

  private static Container patchedContainer(Path patch) {
    Deployment d = (Deployment) KubeYaml.toModel(KubeYaml.documents(patch).get(0));
    return d.getSpec().getTemplate().getSpec().getContainers().stream()
        .filter(c -> c.getName().equals("sluice"))
        .findFirst()
        .orElseThrow();
  }

  private static String readString(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Renders an overlay with kubectl (or kustomize); skips the test where neither is installed. */
  static List<HasMetadata> render(Path overlay) throws Exception {
    List<HasMetadata> resources = new ArrayList<>();
    for (JsonNode doc : KubeYaml.documents(renderYaml(overlay))) {
      resources.add(KubeYaml.toModel(doc));
    }
    return resources;
  }

  /** The overlay as kubectl (or kustomize) renders it, as YAML; skips where neither exists. */
  static String renderYaml(Path overlay) throws Exception {
    List<String> command = null;
    if (onPath("kubectl")) {
      command = List.of("kubectl", "kustomize", overlay.toString());
    } else if (onPath("kustomize")) {
      command = List.of("kustomize", "build", overlay.toString());
    }
    Assumptions.assumeTrue(command != null, "neither kubectl nor kustomize on PATH");
    Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
    byte[] out = p.getInputStream().readAllBytes();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(err).isZero();
    return new String(out, StandardCharsets.UTF_8);
  }

  private static boolean onPath(String tool) {
    String path = System.getenv("PATH");
    if (path == null) {
      return false;
    }
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return false;
  }
}
