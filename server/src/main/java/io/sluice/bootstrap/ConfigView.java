package io.sluice.bootstrap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import io.sluice.config.ConfigWriter;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The effective config (every default filled in) for {@code /config} and {@code sluice config
 * print-default --effective}, in the loader's own key names and syntax ({@link ConfigWriter}), so
 * it can be saved and fed back to {@code sluice validate} or {@code --config}. Every credential is
 * redacted: values of credential-like keys ({@link Secrets#isSecretKey}) become {@code ***}, URL
 * passwords are masked and any known secret value is scrubbed from every string. A redacted value
 * still validates (it is a string); the YAML form says so in a comment at the top. TLS files are
 * shown by path only (their contents are never read here).
 */
final class ConfigView {
  /** Output syntax. */
  enum Format {
    JSON,
    YAML;

    /** {@code json} or {@code yaml} (any case); anything else is null. */
    static @Nullable Format parse(@Nullable String s) {
      if (s == null) {
        return null;
      }
      return switch (s.toLowerCase(Locale.ROOT)) {
        case "json" -> JSON;
        case "yaml", "yml" -> YAML;
        default -> null;
      };
    }
  }

  private static final ObjectMapper JSON_MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final ObjectMapper YAML_MAPPER =
      new ObjectMapper(new YAMLFactory().disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER));

  private ConfigView() {}

  static String render(SluiceConfig config, Format format) {
    return render(config, Secrets.redactor(config.rateLimit().env()), format);
  }

  static String render(SluiceConfig config, Secrets.Redactor redactor, Format format) {
    ObjectNode node = ConfigWriter.tree(config);
    boolean redacted = redact(node, redactor, true);
    try {
      if (format == Format.YAML) {
        String head =
            "# Sluice effective config: every default filled in; `sluice validate` accepts it.\n"
                + (redacted
                    ? "# Credentials are shown as \"***\": put the real values back (or set them"
                        + " as environment variables) before using this file.\n"
                    : "");
        return head + YAML_MAPPER.writeValueAsString(node);
      }
      return JSON_MAPPER.writeValueAsString(node) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Masks credential-like keys and scrubs every string value below {@code node}; returns whether
   * anything was changed.
   */
  private static boolean redact(JsonNode node, Secrets.Redactor redactor, boolean maskByKey) {
    boolean changed = false;
    if (node instanceof ObjectNode o) {
      List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(o.properties());
      for (Map.Entry<String, JsonNode> f : fields) {
        JsonNode v = f.getValue();
        if (v.isTextual()) {
          String shown =
              maskByKey && Secrets.isSecretKey(f.getKey()) && !v.asText().isEmpty()
                  ? Secrets.MASK
                  : redactor.scrub(v.asText());
          if (!shown.equals(v.asText())) {
            o.put(f.getKey(), shown);
            changed = true;
          }
        } else {
          // tenants.known maps tenant ids (not setting names) to tiers
          changed |= redact(v, redactor, maskByKey && !f.getKey().equals("known"));
        }
      }
    } else if (node instanceof ArrayNode a) {
      for (int i = 0; i < a.size(); i++) {
        JsonNode v = a.get(i);
        if (v.isTextual()) {
          String shown = redactor.scrub(v.asText());
          if (!shown.equals(v.asText())) {
            a.set(i, a.textNode(shown));
            changed = true;
          }
        } else {
          changed |= redact(v, redactor, maskByKey);
        }
      }
    }
    return changed;
  }
}
