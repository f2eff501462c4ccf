package io.sluice.bootstrap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import io.sluice.config.SluiceConfig;
import java.time.Duration;

/** Renders the effective config (every default filled in) as JSON for {@code /config}. */
final class ConfigJson {
  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .registerModule(
              new SimpleModule().addSerializer(Duration.class, ToStringSerializer.instance))
          .enable(SerializationFeature.INDENT_OUTPUT);

  private ConfigJson() {}

  static String render(SluiceConfig config) {
    ObjectNode node = MAPPER.valueToTree(config);
    node.remove("yaml");
    ObjectNode signals = MAPPER.createObjectNode();
    config.signals().forEach((k, v) -> signals.set(k.key(), MAPPER.valueToTree(v)));
    node.set("signals", signals);
    try {
      return MAPPER.writeValueAsString(node) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
