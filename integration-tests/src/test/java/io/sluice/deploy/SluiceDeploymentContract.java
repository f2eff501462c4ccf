package io.sluice.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The contract between Sluice's server and its Kubernetes manifests: ports, probes, drain timing,
 * the policy in the ConfigMap, security context, selectors. {@link #violations} returns every
 * broken rule as a readable line, so a test shows all of them at once.
 */
final class SluiceDeploymentContract {
  static final String NAME = "sluice";
  static final String CONFIG_MAP = "sluice-config";
  static final String RATELIMIT_CONFIG_MAP = "sluice-ratelimit";
  static final String CONFIG_DIR = "/etc/sluice";
  static final String CONFIG_KEY = "sluice.yaml";
  static final int GRPC_PORT = 8081;
  static final int ADMIN_PORT = 8080;
  static final String HEALTH_SERVICE = "sluice";
  static final Set<String> HTTP_PROBE_PATHS = Set.of("/healthz", "/readyz");

  private final List<HasMetadata> resources;
  private final List<String> problems = new ArrayList<>();

  private SluiceDeploymentContract(List<HasMetadata> resources) {
    this.resources = resources;
  }

  static List<String> violations(List<HasMetadata> resources) {
    SluiceDeploymentContract c = new SluiceDeploymentContract(resources);
    c.check();
    return c.problems;
  }

  <T extends HasMetadata> Optional<T> find(Class<T> type, String name) {
    return resources.stream()
        .filter(type::isInstance)
        .map(type::cast)
        .filter(r -> name.equals(r.getMetadata().getName()))
        .findFirst();
  }

  private Optional<GenericKubernetesResource> findCustom(String kind, String name) {
    return resources.stream()
        .filter(GenericKubernetesResource.class::isInstance)
        .map(GenericKubernetesResource.class::cast)
        .filter(r -> kind.equals(r.getKind()) && name.equals(r.getMetadata().getName()))
        .findFirst();
  }

  private void problem(String text) {
    problems.add(text);
  }

  private void check() {
    Optional<Deployment> deployment = find(Deployment.class, NAME);
    if (deployment.isEmpty()) {
      problem("Deployment/sluice: missing");
      return;
    }
    PodSpec pod = deployment.get().getSpec().getTemplate().getSpec();
    Map<String, String> podLabels =
        deployment.get().getSpec().getTemplate().getMetadata().getLabels();
    Container container =
        pod.getContainers().stream().filter(c -> NAME.equals(c.getName())).findFirst().orElse(null);
    if (container == null) {
      problem("Deployment/sluice: no container named sluice");
      return;
    }
    if (!selects(deployment.get().getSpec().getSelector().getMatchLabels(), podLabels)) {
      problem("Deployment/sluice: spec.selector does not match the pod template's labels");
    }
    checkPorts(container);
    checkProbes(container);
    SluiceConfig config = checkPolicy(pod, container);
    checkDrain(pod, container, config);
    checkSecurity(pod, container);
    checkRateLimitConfig(pod, container);
    checkService(container, podLabels);
    checkPdb(podLabels);
    checkHpa();
    checkNetworkPolicy(podLabels);
    checkServiceMonitor();
  }

  private void checkPorts(Container container) {
    expectPort(container, "grpc", GRPC_PORT);
    expectPort(container, "http-admin", ADMIN_PORT);
  }

  private void expectPort(Container container, String name, int number) {
    Optional<ContainerPort> port =
        container.getPorts().stream().filter(p -> name.equals(p.getName())).findFirst();
    if (port.isEmpty()) {
      problem("container sluice: no port named " + name + " (expected: " + number + ")");
    } else if (port.get().getContainerPort() != number) {
      problem(
          "container sluice: port "
              + name
              + ": "
              + port.get().getContainerPort()
              + " (expected: "
              + number
              + ")");
    }
  }

  /** The container port a probe or Service targets, by number or by name; -1 if none. */
  static int resolvePort(Container container, IntOrString port) {
    if (port == null) {
      return -1;
    }
    if (port.getIntVal() != null) {
      int n = port.getIntVal();
      return container.getPorts().stream().anyMatch(p -> p.getContainerPort() == n) ? n : -1;
    }
    return container.getPorts().stream()
        .filter(p -> port.getStrVal().equals(p.getName()))
        .map(ContainerPort::getContainerPort)
        .findFirst()
        .orElse(-1);
  }

  private void checkProbes(Container container) {
    Probe readiness = container.getReadinessProbe();
    if (readiness == null) {
      problem("container sluice: no readinessProbe");
    } else {
      checkProbe(container, "readinessProbe", readiness, Set.of("/readyz"));
    }
    if (container.getLivenessProbe() == null) {
      problem("container sluice: no livenessProbe");
    } else {
      checkProbe(container, "livenessProbe", container.getLivenessProbe(), Set.of("/healthz"));
    }
    if (container.getStartupProbe() == null) {
      problem("container sluice: no startupProbe");
    } else {
      checkProbe(container, "startupProbe", container.getStartupProbe(), HTTP_PROBE_PATHS);
    }
  }

  private void checkProbe(Container container, String which, Probe probe, Set<String> paths) {
    if (probe.getGrpc() != null) {
      Integer port = probe.getGrpc().getPort();
      if (port == null || port != GRPC_PORT || resolvePort(container, new IntOrString(port)) < 0) {
        problem(which + ": grpc port " + port + " (expected: " + GRPC_PORT + ")");
      }
      if (!HEALTH_SERVICE.equals(probe.getGrpc().getService())) {
        problem(
            which
                + ": grpc service "
                + probe.getGrpc().getService()
                + " (expected: "
                + HEALTH_SERVICE
                + ")");
      }
    } else if (probe.getHttpGet() != null) {
      int port = resolvePort(container, probe.getHttpGet().getPort());
      if (port != ADMIN_PORT) {
        problem(
            which
                + ": httpGet port "
                + probe.getHttpGet().getPort()
                + " (expected: http-admin / "
                + ADMIN_PORT
                + ")");
      }
      if (!paths.contains(probe.getHttpGet().getPath())) {
        problem(
            which + ": path " + probe.getHttpGet().getPath() + " (expected: one of " + paths + ")");
      }
    } else {
      problem(which + ": neither grpc nor httpGet (expected: one of them)");
    }
  }

  private SluiceConfig checkPolicy(PodSpec pod, Container container) {
    Optional<ConfigMap> map = find(ConfigMap.class, CONFIG_MAP);
    if (map.isEmpty()
        || map.get().getData() == null
        || !map.get().getData().containsKey(CONFIG_KEY)) {
      problem("ConfigMap/" + CONFIG_MAP + ": missing or without key " + CONFIG_KEY);
      return null;
    }
    SluiceConfig config;
    try {
      config = ConfigLoader.parse(map.get().getData().get(CONFIG_KEY));
    } catch (ConfigException e) {
      problem("ConfigMap/" + CONFIG_MAP + ": Sluice rejects the policy: " + e.getMessage());
      return null;
    }
    if (config.server().grpcPort() != GRPC_PORT) {
      problem(
          "policy server.grpc.port "
              + config.server().grpcPort()
              + " (expected: "
              + GRPC_PORT
              + ")");
    }
    if (config.server().adminPort() != ADMIN_PORT) {
      problem(
          "policy server.admin.port "
              + config.server().adminPort()
              + " (expected: "
              + ADMIN_PORT
              + ")");
    }
    Optional<String> volume = volumeFrom(pod, CONFIG_MAP);
    Optional<VolumeMount> mount =
        volume.flatMap(
            v ->
                container.getVolumeMounts().stream()
                    .filter(m -> v.equals(m.getName()))
                    .findFirst());
    if (mount.isEmpty() || !CONFIG_DIR.equals(mount.get().getMountPath())) {
      problem("container sluice: ConfigMap " + CONFIG_MAP + " not mounted at " + CONFIG_DIR);
    } else if (mount.get().getSubPath() != null) {
      problem(
          "container sluice: config mounted with subPath (expected: a directory mount, so updates arrive)");
    }
    List<String> args = container.getArgs() == null ? List.of() : container.getArgs();
    int at = args.indexOf("--config");
    if (at < 0
        || at + 1 >= args.size()
        || !args.get(at + 1).equals(CONFIG_DIR + "/" + CONFIG_KEY)) {
      problem(
          "container sluice: args "
              + args
              + " (expected: serve --config "
              + CONFIG_DIR
              + "/"
              + CONFIG_KEY
              + ")");
    }
    return config;
  }

  private static Optional<String> volumeFrom(PodSpec pod, String configMap) {
    return pod.getVolumes().stream()
        .filter(v -> v.getConfigMap() != null && configMap.equals(v.getConfigMap().getName()))
        .map(Volume::getName)
        .findFirst();
  }

  private void checkDrain(PodSpec pod, Container container, SluiceConfig config) {
    long preStopSeconds = 0;
    if (container.getLifecycle() != null && container.getLifecycle().getPreStop() != null) {
      var preStop = container.getLifecycle().getPreStop();
      if (preStop.getSleep() != null) {
        preStopSeconds = preStop.getSleep().getSeconds();
      } else if (preStop.getExec() != null) {
        List<String> cmd = preStop.getExec().getCommand();
        if (cmd.size() == 2 && cmd.get(0).endsWith("sleep")) {
          preStopSeconds = Long.parseLong(cmd.get(1));
        }
      }
    }
    if (preStopSeconds <= 0) {
      problem(
          "container sluice: no preStop sleep (expected: a few seconds, so endpoints drain first)");
    }
    if (config == null) {
      return;
    }
    long graceSeconds = config.server().shutdownGrace().toSeconds();
    Long termination = pod.getTerminationGracePeriodSeconds();
    long needed = graceSeconds + preStopSeconds;
    if (termination == null || termination <= needed) {
      problem(
          "terminationGracePeriodSeconds "
              + termination
              + " (expected: > shutdownGrace "
              + graceSeconds
              + " s + preStop "
              + preStopSeconds
              + " s)");
    }
  }

  /**
   * JVM options set on the container must keep {@code -XX:+ExitOnOutOfMemoryError} (the image sets
   * it too): a JVM past OutOfMemoryError answers nothing and ignores SIGTERM.
   */
  private void checkJvmOptions(Container container) {
    if (container.getEnv() == null) {
      return;
    }
    container.getEnv().stream()
        .filter(
            e -> e.getName().equals("JAVA_TOOL_OPTIONS") || e.getName().equals("JDK_JAVA_OPTIONS"))
        .forEach(
            e -> {
              String v = e.getValue() == null ? "" : e.getValue();
              if (!v.contains("-XX:+ExitOnOutOfMemoryError")
                  || v.contains("-XX:-ExitOnOutOfMemoryError")) {
                problem(
                    "container sluice: env "
                        + e.getName()
                        + " (expected: to include -XX:+ExitOnOutOfMemoryError)");
              }
            });
  }

  private void checkSecurity(PodSpec pod, Container container) {
    checkJvmOptions(container);
    var podSec = pod.getSecurityContext();
    var sec = container.getSecurityContext();
    if (podSec == null || !Boolean.TRUE.equals(podSec.getRunAsNonRoot())) {
      problem("pod securityContext.runAsNonRoot (expected: true)");
    }
    if (podSec == null
        || podSec.getSeccompProfile() == null
        || !"RuntimeDefault".equals(podSec.getSeccompProfile().getType())) {
      problem("pod securityContext.seccompProfile (expected: RuntimeDefault)");
    }
    if (sec == null || !Boolean.TRUE.equals(sec.getReadOnlyRootFilesystem())) {
      problem("container securityContext.readOnlyRootFilesystem (expected: true)");
    }
    if (sec == null || !Boolean.FALSE.equals(sec.getAllowPrivilegeEscalation())) {
      problem("container securityContext.allowPrivilegeEscalation (expected: false)");
    }
    if (sec == null
        || sec.getCapabilities() == null
        || !List.of("ALL").equals(sec.getCapabilities().getDrop())) {
      problem("container securityContext.capabilities.drop (expected: [ALL])");
    }
    boolean tmp =
        container.getVolumeMounts().stream()
            .filter(m -> "/tmp".equals(m.getMountPath()))
            .anyMatch(
                m ->
                    pod.getVolumes().stream()
                        .anyMatch(v -> v.getName().equals(m.getName()) && v.getEmptyDir() != null));
    if (!tmp) {
      problem("container sluice: no emptyDir at /tmp (the JVM needs it with a read-only root)");
    }
    if (container.getResources() == null
        || container.getResources().getRequests() == null
        || container.getResources().getLimits() == null
        || !container.getResources().getLimits().containsKey("memory")) {
      problem("container sluice: resources (expected: requests and a memory limit)");
    }
  }

  private void checkRateLimitConfig(PodSpec pod, Container container) {
    Optional<ConfigMap> map = find(ConfigMap.class, RATELIMIT_CONFIG_MAP);
    if (map.isEmpty()) {
      problem("ConfigMap/" + RATELIMIT_CONFIG_MAP + ": missing");
      return;
    }
    for (Map.Entry<String, String> file : map.get().getData().entrySet()) {
      JsonNode doc = KubeYaml.documents(file.getValue()).get(0);
      if (!"sluice".equals(doc.path("domain").asText())) {
        problem(
            "ConfigMap/"
                + RATELIMIT_CONFIG_MAP
                + " "
                + file.getKey()
                + ": domain (expected: sluice)");
      }
    }
    String root = env(container, "RUNTIME_ROOT");
    String app = Objects.requireNonNullElse(env(container, "RUNTIME_APPDIRECTORY"), "config");
    Optional<String> volume = volumeFrom(pod, RATELIMIT_CONFIG_MAP);
    boolean mounted =
        volume.isPresent()
            && container.getVolumeMounts().stream()
                .anyMatch(m -> m.getName().equals(volume.get()) && m.getMountPath().equals(root));
    boolean itemsUnderApp =
        volume.isPresent()
            && pod.getVolumes().stream()
                .filter(v -> v.getName().equals(volume.get()))
                .flatMap(v -> v.getConfigMap().getItems().stream())
                .allMatch(i -> i.getPath().startsWith(app + "/"));
    if (!mounted || !itemsUnderApp) {
      problem(
          "ConfigMap/"
              + RATELIMIT_CONFIG_MAP
              + ": not mounted at RUNTIME_ROOT "
              + root
              + " with its files under "
              + app
              + "/");
    }
    String backend = env(container, "BACKEND_TYPE");
    if (!Set.of("memory", "redis").contains(String.valueOf(backend))) {
      problem("env BACKEND_TYPE " + backend + " (expected: memory or redis)");
    }
    if ("redis".equals(backend)) {
      EnvVar url =
          container.getEnv().stream()
              .filter(e -> e.getName().equals("REDIS_URL"))
              .findFirst()
              .orElse(null);
      if (url == null
          || url.getValueFrom() == null
          || url.getValueFrom().getSecretKeyRef() == null) {
        problem("env REDIS_URL (expected: from a Secret when BACKEND_TYPE=redis)");
      }
    }
  }

  static String env(Container container, String name) {
    if (container.getEnv() == null) {
      return null;
    }
    return container.getEnv().stream()
        .filter(e -> e.getName().equals(name))
        .map(EnvVar::getValue)
        .reduce((first, last) -> last) // the container's effective value is the last one
        .orElse(null);
  }

  private void checkService(Container container, Map<String, String> podLabels) {
    Optional<Service> service = find(Service.class, NAME);
    if (service.isEmpty()) {
      problem("Service/sluice: missing");
      return;
    }
    for (Service s :
        resources.stream().filter(Service.class::isInstance).map(Service.class::cast).toList()) {
      if (!selects(s.getSpec().getSelector(), podLabels)) {
        problem(
            "Service/" + s.getMetadata().getName() + ": selector does not match the pod labels");
      }
    }
    Map<String, Integer> expected = Map.of("grpc", GRPC_PORT, "http-admin", ADMIN_PORT);
    for (Map.Entry<String, Integer> e : expected.entrySet()) {
      Optional<ServicePort> port =
          service.get().getSpec().getPorts().stream()
              .filter(p -> e.getKey().equals(p.getName()))
              .findFirst();
      if (port.isEmpty()) {
        problem("Service/sluice: no port named " + e.getKey());
        continue;
      }
      if (resolvePort(container, port.get().getTargetPort()) != e.getValue()) {
        problem(
            "Service/sluice: port "
                + e.getKey()
                + " targets "
                + port.get().getTargetPort()
                + " (expected: "
                + e.getValue()
                + ")");
      }
    }
    service.get().getSpec().getPorts().stream()
        .filter(p -> "grpc".equals(p.getName()))
        .filter(p -> !"grpc".equals(p.getAppProtocol()))
        .forEach(
            p ->
                problem(
                    "Service/sluice: port grpc appProtocol "
                        + p.getAppProtocol()
                        + " (expected: grpc)"));
  }

  private void checkPdb(Map<String, String> podLabels) {
    find(PodDisruptionBudget.class, NAME)
        .ifPresent(
            pdb -> {
              if (!selects(pdb.getSpec().getSelector().getMatchLabels(), podLabels)) {
                problem("PodDisruptionBudget/sluice: selector does not match the pod labels");
              }
              Integer replicas = find(Deployment.class, NAME).get().getSpec().getReplicas();
              IntOrString min = pdb.getSpec().getMinAvailable();
              if (min != null
                  && min.getIntVal() != null
                  && replicas != null
                  && min.getIntVal() >= replicas) {
                problem(
                    "PodDisruptionBudget/sluice: minAvailable "
                        + min.getIntVal()
                        + " >= replicas "
                        + replicas
                        + " (expected: below, or no node could ever be drained)");
              }
            });
  }

  private void checkHpa() {
    find(HorizontalPodAutoscaler.class, NAME)
        .ifPresent(
            hpa -> {
              var ref = hpa.getSpec().getScaleTargetRef();
              if (!"Deployment".equals(ref.getKind()) || !NAME.equals(ref.getName())) {
                problem(
                    "HorizontalPodAutoscaler/sluice: scaleTargetRef "
                        + ref.getKind()
                        + "/"
                        + ref.getName());
              }
              if (hpa.getSpec().getMinReplicas() != null
                  && hpa.getSpec().getMinReplicas() > hpa.getSpec().getMaxReplicas()) {
                problem("HorizontalPodAutoscaler/sluice: minReplicas > maxReplicas");
              }
            });
  }

  /** Label an Envoy pod and its namespace carry to reach the gRPC port. */
  static final Map<String, String> ENVOY_PEER = Map.of("sluice.io/envoy", "true");

  /** Who may scrape the admin port: Prometheus pods in namespace monitoring. */
  static final Map<String, String> MONITORING_NAMESPACE =
      Map.of("kubernetes.io/metadata.name", "monitoring");

  /**
   * Default deny, then grpc only from Envoy pods (namespace AND pod labelled {@link #ENVOY_PEER})
   * and http-admin only from a selected set of pods in namespace monitoring: every container port
   * covered, no rule open to every peer or every port, no IP blocks, no rule mixing the two ports.
   */
  private void checkNetworkPolicy(Map<String, String> podLabels) {
    Optional<NetworkPolicy> found = find(NetworkPolicy.class, NAME);
    if (found.isEmpty()) {
      problem("NetworkPolicy/sluice: missing (expected: ingress limited to Envoy and monitoring)");
      return;
    }
    NetworkPolicy np = found.get();
    if (!selects(np.getSpec().getPodSelector().getMatchLabels(), podLabels)) {
      problem("NetworkPolicy/sluice: podSelector does not match the pod labels");
    }
    if (np.getSpec().getPolicyTypes() == null
        || !np.getSpec().getPolicyTypes().contains("Ingress")) {
      problem("NetworkPolicy/sluice: policyTypes (expected: to include Ingress)");
    }
    Set<String> ports = new java.util.HashSet<>();
    var ingress =
        np.getSpec().getIngress() == null
            ? List.<io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule>of()
            : np.getSpec().getIngress();
    for (int i = 0; i < ingress.size(); i++) {
      var rule = ingress.get(i);
      String at = "NetworkPolicy/sluice: ingress[" + i + "]";
      if (rule.getPorts() == null || rule.getPorts().isEmpty()) {
        problem(at + ": no ports (expected: grpc or http-admin; no ports opens every port)");
        continue;
      }
      Set<String> rulePorts = new java.util.HashSet<>();
      rule.getPorts().stream()
          .map(NetworkPolicyPort::getPort)
          .map(
              p ->
                  p == null
                      ? "*"
                      : p.getStrVal() != null ? p.getStrVal() : String.valueOf(p.getIntVal()))
          .map(
              p ->
                  p.equals(String.valueOf(GRPC_PORT))
                      ? "grpc"
                      : p.equals(String.valueOf(ADMIN_PORT)) ? "http-admin" : p)
          .forEach(rulePorts::add);
      ports.addAll(rulePorts);
      if (!Set.of("grpc", "http-admin").containsAll(rulePorts) || rulePorts.size() != 1) {
        problem(at + ": ports " + rulePorts + " (expected: grpc alone or http-admin alone)");
        continue;
      }
      if (rule.getFrom() == null || rule.getFrom().isEmpty()) {
        problem(at + ": no from (expected: selected peers; an empty from admits everyone)");
        continue;
      }
      boolean grpc = rulePorts.contains("grpc");
      for (var peer : rule.getFrom()) {
        if (peer.getIpBlock() != null) {
          problem(at + ": ipBlock peer (expected: namespaceSelector and podSelector)");
          continue;
        }
        Map<String, String> ns =
            peer.getNamespaceSelector() == null
                ? null
                : peer.getNamespaceSelector().getMatchLabels();
        Map<String, String> pods =
            peer.getPodSelector() == null ? null : peer.getPodSelector().getMatchLabels();
        if (grpc) {
          if (ns == null
              || !ns.entrySet().containsAll(ENVOY_PEER.entrySet())
              || pods == null
              || !pods.entrySet().containsAll(ENVOY_PEER.entrySet())) {
            problem(
                at
                    + ": grpc peer "
                    + ns
                    + "/"
                    + pods
                    + " (expected: namespaceSelector and podSelector both "
                    + ENVOY_PEER
                    + ")");
          }
        } else if (ns == null
            || !ns.entrySet().containsAll(MONITORING_NAMESPACE.entrySet())
            || pods == null
            || pods.isEmpty()) {
          problem(
              at
                  + ": http-admin peer "
                  + ns
                  + "/"
                  + pods
                  + " (expected: namespaceSelector "
                  + MONITORING_NAMESPACE
                  + " and a podSelector for Prometheus)");
        }
      }
    }
    if (!ports.contains("grpc") || !ports.contains("http-admin")) {
      problem("NetworkPolicy/sluice: ingress ports " + ports + " (expected: grpc and http-admin)");
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();
  static final Set<String> SERVICE_MONITOR_SPEC_KEYS =
      Set.of(
          "selector",
          "namespaceSelector",
          "endpoints",
          "jobLabel",
          "podTargetLabels",
          "targetLabels",
          "sampleLimit");
  static final Set<String> SERVICE_MONITOR_ENDPOINT_KEYS =
      Set.of(
          "port",
          "path",
          "interval",
          "scrapeTimeout",
          "scheme",
          "honorLabels",
          "relabelings",
          "metricRelabelings",
          "tlsConfig");

  private void checkServiceMonitor() {
    Optional<GenericKubernetesResource> sm = findCustom("ServiceMonitor", NAME);
    if (sm.isEmpty()) {
      return;
    }
    JsonNode spec = JSON.valueToTree(sm.get().getAdditionalProperties().get("spec"));
    spec.fieldNames()
        .forEachRemaining(
            k -> {
              if (!SERVICE_MONITOR_SPEC_KEYS.contains(k)) {
                problem("ServiceMonitor/sluice: unknown spec field " + k);
              }
            });
    Service service = find(Service.class, NAME).orElse(null);
    Map<String, String> wanted =
        JSON.convertValue(spec.path("selector").path("matchLabels"), Map.class);
    if (service == null || wanted == null || !selects(wanted, service.getMetadata().getLabels())) {
      problem("ServiceMonitor/sluice: selector does not match Service/sluice's labels");
    }
    if (spec.path("endpoints").isEmpty()) {
      problem("ServiceMonitor/sluice: no endpoints");
    }
    for (JsonNode endpoint : spec.path("endpoints")) {
      endpoint
          .fieldNames()
          .forEachRemaining(
              k -> {
                if (!SERVICE_MONITOR_ENDPOINT_KEYS.contains(k)) {
                  problem("ServiceMonitor/sluice: unknown endpoint field " + k);
                }
              });
      if (!"http-admin".equals(endpoint.path("port").asText())) {
        problem(
            "ServiceMonitor/sluice: endpoint port "
                + endpoint.path("port")
                + " (expected: http-admin)");
      }
      if (!"/metrics".equals(endpoint.path("path").asText("/metrics"))) {
        problem(
            "ServiceMonitor/sluice: endpoint path "
                + endpoint.path("path")
                + " (expected: /metrics)");
      }
    }
  }

  /** True if every selector label is on {@code labels} (and the selector is not empty). */
  static boolean selects(Map<String, String> selector, Map<String, String> labels) {
    return selector != null
        && !selector.isEmpty()
        && labels != null
        && selector.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
  }
}
