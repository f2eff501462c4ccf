package io.sluice.bootstrap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Renders the effective config (every default filled in) as JSON for {@code /config}, with every
 * credential redacted: values of credential-like keys ({@link Secrets#isSecretKey}) become {@code
 * ***}, URL passwords are masked, and any known secret value is scrubbed from every string. TLS
 * files are shown by path only (their contents are never read here).
 */
final class ConfigJson {
  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .registerModule(
              new SimpleModule().addSerializer(Duration.class, ToStringSerializer.instance))
          .enable(SerializationFeature.INDENT_OUTPUT);

  private ConfigJson() {}

  static String render(SluiceConfig config) {
    return render(config, Secrets.redactor(config.rateLimit().env()));
  }

  static String render(SluiceConfig config, Secrets.Redactor redactor) {
    ObjectNode node = MAPPER.valueToTree(config);
    node.remove("yaml");
    ObjectNode signals = MAPPER.createObjectNode();
    config.signals().forEach((k, v) -> signals.set(k.key(), MAPPER.valueToTree(v)));
    node.set("signals", signals);
    redact(node, null, redactor, true);
    try {
      return MAPPER.writeValueAsString(node) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Masks credential-like keys and scrubs every string value below {@code node}. */
  private static void redact(
      JsonNode node, String key, Secrets.Redactor redactor, boolean maskByKey) {
    if (node instanceof ObjectNode o) {
      List<Map.Entry<String, JsonNode>> fields = new ArrayList<>();
      o.fields().forEachRemaining(fields::add);
      for (Map.Entry<String, JsonNode> f : fields) {
        JsonNode v = f.getValue();
        if (v.isTextual()) {
          String shown =
              maskByKey && Secrets.isSecretKey(f.getKey()) && !v.asText().isEmpty()
                  ? Secrets.MASK
                  : redactor.scrub(v.asText());
          o.put(f.getKey(), shown);
        } else {
          // tenants.known maps tenant ids (not setting names) to tiers
          redact(v, f.getKey(), redactor, !f.getKey().equals("known"));
        }
      }
    } else if (node instanceof ArrayNode a) {
      for (int i = 0; i < a.size(); i++) {
        JsonNode v = a.get(i);
        if (v.isTextual()) {
          a.set(i, a.textNode(redactor.scrub(v.asText())));
        } else {
          redact(v, key, redactor, maskByKey);
        }
      }
    }
  }
}
