package io.sluice.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;

/**
 * The Sluice policy of one end-to-end test: {@code e2e/policy.yaml} with single keys overridden,
 * e.g. {@code Policy.base().with("unmatched.action", "reject")}.
 */
final class Policy {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private final ObjectNode root;

  private Policy(ObjectNode root) {
    this.root = root;
  }

  static Policy base() {
    try (InputStream in = Policy.class.getResourceAsStream("/e2e/policy.yaml")) {
      if (in == null) {
        throw new IllegalStateException("missing test resource /e2e/policy.yaml");
      }
      return new Policy((ObjectNode) YAML.readTree(in));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The base policy on the shared Redis at 127.0.0.1:6379 under {@code keyPrefix}: the rate limit
   * off (its backend named for the stores), replica shares renewed every 100 ms.
   */
  static Policy onRedis(String keyPrefix) {
    return base()
        .with("quotas.keyPrefix", keyPrefix)
        .with("rateLimit.enabled", "false")
        .with("rateLimit.env", "{BACKEND_TYPE: redis, REDIS_URL: \"127.0.0.1:6379\"}")
        .with("replicas", "{renewInterval: 100ms, leaseTtl: 2s, keepShareFor: 1s}");
  }

  /** Whether a Redis answers on 127.0.0.1:6379 (the tests on it are skipped when none does). */
  static boolean redisReachable() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", 6379), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Sets the key at a dotted path (missing objects are created) to a YAML value. */
  Policy with(String dottedPath, String yamlValue) {
    JsonNode value;
    try {
      value = YAML.readTree(yamlValue);
    } catch (IOException e) {
      throw new IllegalArgumentException("yamlValue: " + yamlValue + " (expected: YAML)", e);
    }
    String[] keys = dottedPath.split("\\.");
    ObjectNode at = root;
    for (int i = 0; i < keys.length - 1; i++) {
      JsonNode next = at.get(keys[i]);
      at = next instanceof ObjectNode o ? o : at.putObject(keys[i]);
    }
    at.set(keys[keys.length - 1], value);
    return this;
  }

  String yaml() {
    try {
      return YAML.writeValueAsString(root);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
