package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.lang.reflect.RecordComponent;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@link ConfigWriter} is the loader's inverse: what it writes parses back, with zero errors, to an
 * equal config. Checked on the embedded default and on a policy that sets every section, every kind
 * of signal source, TLS, tenants, estimate modes and non-default durations.
 */
public class ConfigWriterTest {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  public static final String RICH =
      """
      server:
        grpc:
          host: 127.0.0.1
          port: 9081
          maxInboundMessageSize: 4MiB
          tls: {certFile: /etc/tls/tls.crt, keyFile: /etc/tls/tls.key, clientCaFile: /etc/tls/ca.crt, refreshInterval: 90s}
          maxStreams: 1000
          maxStreamsPerConnection: 100
          firstMessageTimeout: 1500ms
          idleTimeout: 0s
          admittedIdleTimeout: 1h
        admin: {host: 127.0.0.1, port: 9080}
        shutdownGrace: 45s
        reloadInterval: 250ms
        health: {maxHeapAfterGc: 0.8, heapAfterGcFor: 2m}
        warmup: {enabled: false, streams: 3, rlsCalls: 2, timeout: 5s, storeTimeout: 0.5ms}
      limits: {maxBodyBytes: 1048576}
      estimation: {bytesPerToken: 3.5, imageTokens: 800, defaultInputTokens: 2048, tokenCacheChars: 0, learnedReserve: {enabled: false, warmup: 7, halfLife: 300, maxKeys: 99, tenantKeys: false, confidence: 0.8, poolPrior: false, shareInterval: 5s, shareWindow: 30m}}
      pools:
        gpu-a:
          capacity: 100000
          maxRequests: 16
          inputWeight: 0.5
          outputWeight: 2.0
          retryAfter: {min: 2s, max: 90s, jitter: 0.1}
          maxMessageTimeout: 5s
          holdMargin: 50ms
          defaultServiceTime: 3s
          adaptive:
            enabled: true
            minCapacity: 20000
            minRequests: 4
            interval: 2s
            minSamples: 20
            latency: {growBelow: 1.2, shrinkAbove: 1.5, baselineWindow: 5m}
            backoff: 0.6
            maxPause: 10s
            overloadStatuses: [429, 529]
        cpu: {capacity: 10}
      classes:
        interactive:
          rank: 0
          reservedShare: 0.6
          lendableShare: 0.2
          deadline: 20s
          maxQueueWait: 1s
          shedStatus: 429
          queue: {workShare: 1.5, maxItems: 50, tenantShare: 0.25}
        batch: {rank: 1, reservedShare: 0.1, borrow: false, deadline: 10m, reserveQuantile: 0.8}
      tiers:
        free: {weight: 1, maxInFlight: 2, rpm: 60, inputTpm: 10000, outputTpm: 5000}
        pro: {weight: 3, maxInFlight: 0}
      tenants:
        anonymousTier: free
        unknown: reject
        unknownTier: free
        known: {acme: {tier: pro}, "tenant.with.dots": {tier: free}}
      signals:
        tenant:
          - dynamicMetadata: {namespace: envoy.filters.http.jwt_authn, path: [payload, tenant]}
          - metadata: x-sluice-tenant
        class:
          - attribute: xds.route_metadata
        route:
          - header: x-route
      routes:
        - name: chat
          match: {route: chat, pathPrefix: /v1/chat}
          pool: gpu-a
          class: interactive
          format: openai-chat
        - name: exact
          match: {path: /v1/embeddings}
          pool: cpu
          class: batch
          format: openai-embeddings
          estimate: headers
      unmatched: {action: reject, pool: cpu, class: batch, format: auto, estimate: headers}
      responses: {decisionHeader: false, estimateHeader: true}
      decisionLog: {enabled: true, level: warn, sampleRate: 0.25, alwaysLogRejects: false}
      rateLimit:
        enabled: false
        env: {BACKEND_TYPE: memory, RUNTIME_ROOT: /srv/rl}
      quotas: {failureMode: closed, keyPrefix: q_}
      """;

  @Test
  void embeddedDefault_roundTripsThroughTheLoader() throws Exception {
    assertRoundTrips(ConfigLoader.embeddedDefault());
  }

  @Test
  void richPolicy_roundTripsThroughTheLoader() throws Exception {
    SluiceConfig rich = ConfigLoader.parse(RICH);
    assertThat(rich.server().tls()).isNotNull();
    assertThat(rich.estimation().learnedReserve())
        .isEqualTo(
            new io.sluice.core.estimate.OutputReserves.Settings(
                false, 7, 300, 99, false, 0.8, false, 5_000, 1_800_000));
    assertThat(rich.classes().get("batch").reserveQuantile()).isEqualTo(0.8);
    assertRoundTrips(rich);
  }

  @Test
  void durations_areWrittenInTheLoadersSyntaxInTheLargestExactUnit() {
    assertThat(ConfigWriter.duration(Duration.ZERO)).isEqualTo("0s");
    assertThat(ConfigWriter.duration(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(ConfigWriter.duration(Duration.ofSeconds(120))).isEqualTo("2m");
    assertThat(ConfigWriter.duration(Duration.ofHours(1))).isEqualTo("1h");
    assertThat(ConfigWriter.duration(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(ConfigWriter.duration(Duration.ofNanos(500_000))).isEqualTo("0.5ms");
  }

  private static void assertRoundTrips(SluiceConfig c) throws Exception {
    String yaml = YAML.writeValueAsString(ConfigWriter.tree(c));
    SluiceConfig back = ConfigLoader.parse(yaml); // throws listing every error, if any
    for (RecordComponent rc : SluiceConfig.class.getRecordComponents()) {
      if (rc.getName().equals("yaml")) {
        continue;
      }
      assertThat(rc.getAccessor().invoke(back))
          .as(rc.getName() + " after a round trip of\n" + yaml)
          .isEqualTo(rc.getAccessor().invoke(c));
    }
    // and writing it again gives the same text (a fixed point)
    assertThat(YAML.writeValueAsString(ConfigWriter.tree(back))).isEqualTo(yaml);
  }
}
