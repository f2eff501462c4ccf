package io.sluice.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

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
