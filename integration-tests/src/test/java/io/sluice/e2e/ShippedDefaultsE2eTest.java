package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.envoyconfig.EnvoyBootstrapParser;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The shipped pieces, end to end: the Envoy emulator set up as the shipped {@code envoy.yaml} (its
 * ext_proc filter and the chat route's metadata read from the file) or as the shipped Envoy Gateway
 * policy (no {@code max_message_timeout}, no initial metadata), in front of the embedded default
 * policy or the k8s ConfigMap's, unchanged but for ports and the store. A request carries the
 * verified JWT claim as {@code x-tenant-id}, as {@code jwt_authn} sets it after the sanitizer.
 */
class ShippedDefaultsE2eTest {
  static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..").normalize();
  static final YAMLMapper YAML = new YAMLMapper();

  private final List<SluiceServer> servers = new ArrayList<>();
  private final List<EnvoyExtProcEmulator> envoys = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    envoys.forEach(EnvoyExtProcEmulator::close);
    servers.forEach(SluiceServer::close);
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  // ---- the shipped pieces ------------------------------------------------------------------

  static String embeddedDefault() {
    return ConfigLoader.embeddedDefaultYaml();
  }

  static String configMapPolicy() throws IOException {
    JsonNode map = YAML.readTree(Files.readString(ROOT.resolve("k8s/base/configmap.yaml")));
    return map.path("data").path("sluice.yaml").asText();
  }

  /** The policy with loopback ephemeral ports and {@code edit} applied, nothing else changed. */
  static String runnable(String policy, Consumer<ObjectNode> edit) throws IOException {
    ObjectNode root = (ObjectNode) YAML.readTree(policy);
    ObjectNode server = root.withObjectProperty("server");
    server.withObjectProperty("grpc").put("host", "127.0.0.1").put("port", 0);
    server.withObjectProperty("admin").put("host", "127.0.0.1").put("port", 0);
    edit.accept(root);
    return YAML.writeValueAsString(root);
  }

  static ExternalProcessor shippedExtProc(Bootstrap b) {
    for (var any : EnvoyBootstrapParser.allAnys(b)) {
      if (any.is(ExternalProcessor.class)) {
        try {
          return any.unpack(ExternalProcessor.class);
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    throw new AssertionError("no ext_proc filter");
  }

  /** The emulator's filter as envoy.yaml's ext_proc filter is set. */
  static FilterConfig shippedEnvoyYamlFilter() throws IOException {
    ExternalProcessor p =
        shippedExtProc(EnvoyBootstrapParser.parseFile(ROOT.resolve("envoy-config/envoy.yaml")));
    ProcessingMode m = p.getProcessingMode();
    assertThat(m.getRequestBodyMode()).isEqualTo(ProcessingMode.BodySendMode.BUFFERED);
    assertThat(m.getResponseBodyMode()).isEqualTo(ProcessingMode.BodySendMode.STREAMED);
    FilterConfig.Builder f =
        FilterConfig.builder()
            .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
            .responseBodyMode(FilterConfig.BodyMode.STREAMED)
            .responseHeaderMode(FilterConfig.HeaderMode.SEND)
            .messageTimeout(Duration.ofMillis(p.getMessageTimeout().getSeconds() * 1000))
            .maxMessageTimeout(Duration.ofSeconds(p.getMaxMessageTimeout().getSeconds()))
            .failureModeAllow(p.getFailureModeAllow())
            .receivingNamespaces(
                p.getMetadataOptions()
                    .getReceivingNamespaces()
                    .getUntypedList()
                    .toArray(String[]::new))
            .forwardingNamespaces(
                p.getMetadataOptions()
                    .getForwardingNamespaces()
                    .getUntypedList()
                    .toArray(String[]::new))
            .grpcAuthority("sluice");
    p.getGrpcService()
        .getInitialMetadataList()
        .forEach(h -> f.grpcInitialMetadata(h.getKey(), h.getValue()));
    return f.build();
  }

  /** The emulator's filter as Envoy Gateway builds it from sluice-extension-policy.yaml. */
  static FilterConfig shippedEnvoyGatewayFilter() throws IOException {
    JsonNode ext = null;
    for (JsonNode doc :
        YAML.readValues(
                YAML.getFactory()
                    .createParser(
                        ROOT.resolve("envoy-config/envoy-gateway/sluice-extension-policy.yaml")
                            .toFile()),
                JsonNode.class)
            .readAll()) {
      if (doc.path("kind").asText().equals("EnvoyExtensionPolicy")) {
        ext = doc.at("/spec/extProc/0");
      }
    }
    assertThat(ext).isNotNull();
    assertThat(ext.has("maxMessageTimeout"))
        .as("Envoy Gateway has no max_message_timeout")
        .isFalse();
    assertThat(ext.at("/processingMode/request/body").asText()).isEqualTo("Buffered");
    assertThat(ext.at("/processingMode/response/body").asText()).isEqualTo("Streamed");
    return FilterConfig.builder()
        .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
        .responseBodyMode(FilterConfig.BodyMode.STREAMED)
        .responseHeaderMode(FilterConfig.HeaderMode.SEND)
        .messageTimeout(Duration.parse("PT" + ext.path("messageTimeout").asText().toUpperCase()))
        .maxMessageTimeout(Duration.ZERO) // none: override_message_timeout is ignored
        .failureModeAllow(ext.path("failOpen").asBoolean())
        .receivingNamespaces("sluice")
        .grpcAuthority("sluice")
        .build();
  }

  /** The chat route's per-route gRPC initial metadata in envoy.yaml. */
  static Map<String, String> shippedChatRouteMetadata() throws IOException {
    Bootstrap b = EnvoyBootstrapParser.parseFile(ROOT.resolve("envoy-config/envoy.yaml"));
    Map<String, String> out = new LinkedHashMap<>();
    for (var any : EnvoyBootstrapParser.allAnys(b)) {
      if (any.is(HttpConnectionManager.class)) {
        for (var vh :
            any.unpack(HttpConnectionManager.class).getRouteConfig().getVirtualHostsList()) {
          for (Route r : vh.getRoutesList()) {
            if (r.getName().equals("chat")) {
              r.getTypedPerFilterConfigOrThrow("envoy.filters.http.ext_proc")
                  .unpack(ExtProcPerRoute.class)
                  .getOverrides()
                  .getGrpcInitialMetadataList()
                  .forEach(h -> out.put(h.getKey(), h.getValue()));
            }
          }
        }
      }
    }
    assertThat(out).containsKey("x-sluice-class");
    return out;
  }

  static HttpRequest chat(String tenant, Map<String, String> routeMetadata) {
    HttpRequest.Builder b =
        HttpRequest.post(SluiceEnvoyHarness.CHAT, SluiceEnvoyHarness.chatBody(20, false));
    routeMetadata.forEach(b::routeGrpcInitialMetadata);
    if (tenant != null) {
      b.header("x-tenant-id", tenant); // jwt_authn claim_to_headers, after sluice.sanitize
    }
    return b.build();
  }

  private EnvoyExtProcEmulator start(String policy, FilterConfig filter, Upstream to)
      throws IOException {
    SluiceServer s = SluiceServer.start(ConfigLoader.parse(policy));
    servers.add(s);
    EnvoyExtProcEmulator e = EnvoyExtProcEmulator.connect("127.0.0.1:" + s.grpcPort(), filter, to);
    envoys.add(e);
    return e;
  }

  // ---- 8 concurrent requests, admitted under their tenants ----------------------------------

  /**
   * 8 concurrent requests of one tenant and 8 without a tenant reach the upstream at once (each
   * held there until all 16 have arrived), each filed under its own tenant.
   */
  private void assertEightAdmitted(
      List<EnvoyExtProcEmulator> via, ControlledUpstream held, Map<String, String> routeMetadata)
      throws Exception {
    List<CompletableFuture<HttpResult>> acme = new ArrayList<>();
    List<CompletableFuture<HttpResult>> anonymous = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      EnvoyExtProcEmulator e = via.get(i % via.size());
      acme.add(e.sendAsync(chat("acme", routeMetadata)));
      anonymous.add(e.sendAsync(chat(null, routeMetadata)));
    }
    try {
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () -> {
                List<String> refused = new ArrayList<>();
                for (var f : acme) {
                  if (f.isDone()) {
                    refused.add(f.join().status() + " " + f.join().bodyUtf8());
                  }
                }
                for (var f : anonymous) {
                  if (f.isDone()) {
                    refused.add(f.join().status() + " " + f.join().bodyUtf8());
                  }
                }
                assertThat(refused).as("answered before the upstream let go").isEmpty();
                assertThat(held.received()).hasSize(16);
              });
    } finally {
      held.releaseHeld();
    }
    for (var f : acme) {
      HttpResult r = SluiceEnvoyHarness.result(f);
      assertThat(r.status()).isEqualTo(200);
      assertThat(SluiceEnvoyHarness.str(SluiceEnvoyHarness.sluiceMetadata(r), "tenant"))
          .isEqualTo("acme");
    }
    for (var f : anonymous) {
      HttpResult r = SluiceEnvoyHarness.result(f);
      assertThat(r.status()).isEqualTo(200);
      assertThat(SluiceEnvoyHarness.str(SluiceEnvoyHarness.sluiceMetadata(r), "tenant"))
          .isEqualTo("anonymous");
    }
  }

  @Test
  void shippedEnvoyYaml_embeddedDefault_eightConcurrentPerTenantAdmitted() throws Exception {
    ControlledUpstream held = new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    closeables.add(held);
    EnvoyExtProcEmulator e =
        start(runnable(embeddedDefault(), c -> {}), shippedEnvoyYamlFilter(), held);
    assertEightAdmitted(List.of(e), held, shippedChatRouteMetadata());
  }

  @Test
  void shippedEnvoyYaml_configMap_eightConcurrentPerTenantAdmitted() throws Exception {
    ControlledUpstream held = new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    closeables.add(held);
    EnvoyExtProcEmulator e =
        start(runnable(configMapPolicy(), c -> {}), shippedEnvoyYamlFilter(), held);
    assertEightAdmitted(List.of(e), held, shippedChatRouteMetadata());
  }

  @Test
  void shippedEnvoyYaml_configMap_threeReplicasOnRedis_eightConcurrentPerTenantAdmitted()
      throws Exception {
    assumeTrue(Policy.redisReachable(), "redis-server on 127.0.0.1:6379");
    ControlledUpstream held = new ControlledUpstream().mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    closeables.add(held);
    String prefix = "sluice_e2e_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String policy =
        runnable(
            configMapPolicy(),
            c -> {
              c.withObjectProperty("quotas").put("keyPrefix", prefix);
              ObjectNode rl = c.withObjectProperty("rateLimit");
              rl.put("enabled", false);
              rl.withObjectProperty("env")
                  .put("BACKEND_TYPE", "redis")
                  .put("REDIS_URL", "127.0.0.1:6379")
                  .put("REDIS_COMMAND_TIMEOUT", "2s");
              c.withObjectProperty("replicas").put("renewInterval", "100ms");
            });
    List<EnvoyExtProcEmulator> via = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      via.add(start(policy, shippedEnvoyYamlFilter(), held));
    }
    // every replica's leased share admits a few requests (right after a start the first may
    // still hold the whole pool for a renewal or two)
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> {
              for (SluiceServer s : servers) {
                assertThat(s.replicaShares().get("default").grantedRequests())
                    .isGreaterThanOrEqualTo(6);
              }
            });
    assertEightAdmitted(via, held, shippedChatRouteMetadata());
  }

  // ---- Envoy Gateway: no max_message_timeout, no hold, no 504 --------------------------------

  /** Answers each request after {@code delay}; counts what it served. */
  static final class SlowUpstream implements Upstream, AutoCloseable {
    final SimulatedLlmUpstream llm =
        SimulatedLlmUpstream.create(SimulatedLlmUpstream.Settings.instant());
    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    final Duration delay;

    SlowUpstream(Duration delay) {
      this.delay = delay;
    }

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      CompletableFuture<UpstreamResponse> out = new CompletableFuture<>();
      timer.schedule(
          () ->
              llm.send(request)
                  .whenComplete(
                      (r, e) -> {
                        if (e != null) {
                          out.completeExceptionally(e);
                        } else {
                          out.complete(r);
                        }
                      }),
          delay.toMillis(),
          TimeUnit.MILLISECONDS);
      return out;
    }

    @Override
    public void close() {
      timer.shutdownNow();
      llm.close();
    }
  }

  /** Offers 3× the pool's maxRequests at once; returns status → count. */
  private Map<Integer, Integer> threeTimesLoad(String policy) throws Exception {
    SlowUpstream slow = new SlowUpstream(Duration.ofMillis(1500));
    closeables.add(slow);
    EnvoyExtProcEmulator e = start(policy, shippedEnvoyGatewayFilter(), slow);
    int maxRequests = servers.get(servers.size() - 1).config().pools().get("default").maxRequests();
    List<CompletableFuture<HttpResult>> sent = new ArrayList<>();
    // Envoy Gateway sends no per-route metadata: Sluice classifies by path (routes)
    for (int i = 0; i < 3 * maxRequests; i++) {
      sent.add(e.sendAsync(chat("t" + (i % 8), Map.of())));
    }
    Map<Integer, Integer> byStatus = new java.util.TreeMap<>();
    for (var f : sent) {
      HttpResult r = f.get(20, TimeUnit.SECONDS);
      byStatus.merge(r.status(), 1, Integer::sum);
    }
    return byStatus;
  }

  @Test
  void shippedEnvoyGateway_configMap_threeTimesLoad_no504() throws Exception {
    Map<Integer, Integer> byStatus = threeTimesLoad(runnable(configMapPolicy(), c -> {}));
    assertThat(byStatus).as("statuses").doesNotContainKey(504).containsKey(200);
    assertThat(envoys.get(0).stats().messageTimeouts()).isZero();
    // refused at once, with a Retry-After, never held
    assertThat(envoys.get(0).stats().overrideMessageTimeoutReceived()).isZero();
  }

  /** The same offer with the pool holding on its own (the old ConfigMap): waits become 504s. */
  @Test
  void envoyGateway_behindAPoolThatHolds_waitsBecome504s() throws Exception {
    Map<Integer, Integer> byStatus =
        threeTimesLoad(
            runnable(
                configMapPolicy(),
                c ->
                    c.withObjectProperty("pools")
                        .withObjectProperty("default")
                        .put("maxMessageTimeout", "30s")));
    assertThat(byStatus).as("statuses").containsKey(504);
  }
}
