package io.sluice.bench;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/** Sluice policies for the benchmarks (YAML text, parsed by Sluice's own loader). */
final class Policies {
  private Policies() {}

  static String policy(
      long capacity,
      int maxRequests,
      long holdMillis,
      String classesYaml,
      @Nullable String defaultClass) {
    return """
        server:
          grpc: {host: 127.0.0.1, port: 0}
          admin: {host: 127.0.0.1, port: 0}
          shutdownGrace: 1s
        pools:
          llm:
            capacity: %d
            maxRequests: %d
            maxMessageTimeout: %dms
            defaultServiceTime: 2s
            retryAfter: {min: 1s, max: 10s}
        classes:
        %s
        tiers:
          standard: {weight: 1, maxInFlight: 0}
        tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
        signals:
          tenant: [{metadata: x-sluice-tenant}]
          class: [{metadata: x-sluice-class}]
          maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
          deadlineMs: [{header: x-sluice-timeout-ms}]
          # not x-request-id: the floor's pre-encoded frame repeats one, which retry control
          # rightly takes for one operation sent again and again (409 duplicate_operation)
          operationId: [{header: idempotency-key}]
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: %s, format: openai-chat}
        unmatched: {action: admit, pool: llm, class: %s}
        responses: {decisionHeader: false, estimateHeader: false}
        decisionLog: {enabled: false}
        rateLimit: {enabled: false}
        """
        .formatted(
            capacity,
            maxRequests,
            holdMillis,
            classesYaml.stripTrailing(),
            defaultClass,
            defaultClass);
  }

  /** The embedded default policy with loopback ports chosen by the OS. */
  static SluiceConfig embeddedDefaultOnFreePorts() {
    try (InputStream in = ConfigLoader.class.getResourceAsStream(ConfigLoader.DEFAULT_RESOURCE)) {
      String yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      String patched =
          yaml.replace("host: 0.0.0.0, port: 8081", "host: 127.0.0.1, port: 0")
              .replace("host: 0.0.0.0, port: 8080", "host: 127.0.0.1, port: 0")
              .replace("shutdownGrace: 30s", "shutdownGrace: 1s")
              .replace("decisionLog:\n  enabled: true", "decisionLog:\n  enabled: false")
              // The demo's four tenants are known, at tier standard (unknown ones get the
              // anonymous tier, default: no per-tenant cap).
              .replace(
                  "  known: {}",
                  "  known: {acme: {tier: standard}, globex: {tier: standard},"
                      + " initech: {tier: standard}, umbrella: {tier: standard}}");
      if (patched.equals(yaml) || !patched.contains("decisionLog:\n  enabled: false")) {
        throw new IllegalStateException("embedded default policy changed shape; update the demo");
      }
      return ConfigLoader.parse(patched);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
