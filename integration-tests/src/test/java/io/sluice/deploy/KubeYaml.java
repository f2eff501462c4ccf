package io.sluice.deploy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.internal.KubernetesDeserializer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads Kubernetes manifests strictly with fabric8's model. fabric8 keeps unknown fields in each
 * object's {@code additionalProperties} instead of failing, so {@link #unknownFields} walks the
 * parsed tree and reports every one of them: a misspelled field then fails the test.
 */
final class KubeYaml {
  /** API groups Sluice ships whose kinds fabric8's core model does not know (CRDs). */
  static final Set<String> CRD_API_VERSIONS = Set.of("monitoring.coreos.com/v1");

  private static final YAMLFactory YAML_FACTORY = new YAMLFactory();
  private static final ObjectMapper YAML = new ObjectMapper(YAML_FACTORY);
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * fabric8 8 is built on Jackson 3 ({@code tools.jackson}); its deserializer picks the model class
   * from apiVersion and kind (GenericKubernetesResource when no class matches).
   */
  private static final tools.jackson.databind.json.JsonMapper KUBE =
      tools.jackson.databind.json.JsonMapper.builder()
          .addModule(
              new tools.jackson.databind.module.SimpleModule()
                  .addDeserializer(KubernetesResource.class, new KubernetesDeserializer()))
          .build();

  private KubeYaml() {}

  /** Every non-empty YAML document of {@code file}. */
  static List<JsonNode> documents(Path file) {
    try {
      return documents(Files.readString(file));
    } catch (IOException e) {
      throw new UncheckedIOException(file.toString(), e);
    }
  }

  static List<JsonNode> documents(String yaml) {
    List<JsonNode> docs = new ArrayList<>();
    try (JsonParser parser = YAML_FACTORY.createParser(yaml);
        MappingIterator<JsonNode> it = YAML.readValues(parser, JsonNode.class)) {
      while (it.hasNextValue()) {
        JsonNode doc = it.nextValue();
        if (doc != null && !doc.isNull() && !doc.isMissingNode()) {
          docs.add(doc);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return docs;
  }

  /**
   * A typed fabric8 object for a built-in kind; throws if the kind is unknown to the model (a typo
   * in apiVersion or kind) or if any field is unknown. CRD kinds are returned as {@link
   * GenericKubernetesResource} and must be checked by the caller.
   */
  static HasMetadata toModel(JsonNode doc) {
    KubernetesResource resource;
    try {
      resource = KUBE.readValue(JSON.writeValueAsString(doc), KubernetesResource.class);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(describe(doc) + ": " + e.getMessage(), e);
    }
    if (!(resource instanceof HasMetadata typed)) {
      throw new IllegalArgumentException(describe(doc) + ": not a Kubernetes object");
    }
    if (typed instanceof GenericKubernetesResource) {
      if (!CRD_API_VERSIONS.contains(doc.path("apiVersion").asText())) {
        throw new IllegalArgumentException(
            describe(doc) + ": kind unknown to the Kubernetes model (expected: a built-in kind)");
      }
      return typed;
    }
    List<String> unknown = unknownFields(typed);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(describe(doc) + ": unknown fields " + unknown);
    }
    return typed;
  }

  static String describe(JsonNode doc) {
    return doc.path("kind").asText("?") + "/" + doc.path("metadata").path("name").asText("?");
  }

  /** Paths of every field fabric8 did not recognise, e.g. {@code spec.template.spec.foo}. */
  static List<String> unknownFields(Object model) {
    List<String> found = new ArrayList<>();
    walk(model, "", found);
    return found;
  }

  private static void walk(Object node, String path, List<String> found) {
    if (node == null) {
      return;
    }
    if (node instanceof Collection<?> list) {
      int i = 0;
      for (Object element : list) {
        walk(element, path + "[" + i++ + "]", found);
      }
      return;
    }
    if (node instanceof Map<?, ?> map) {
      for (Map.Entry<?, ?> e : map.entrySet()) {
        walk(e.getValue(), path + "[" + e.getKey() + "]", found);
      }
      return;
    }
    if (!node.getClass().getName().startsWith("io.fabric8.kubernetes.api.model")) {
      return;
    }
    for (Method m : node.getClass().getMethods()) {
      if (m.getParameterCount() != 0
          || Modifier.isStatic(m.getModifiers())
          || !m.getName().startsWith("get")
          || m.getDeclaringClass() == Object.class) {
        continue;
      }
      Object value;
      try {
        value = m.invoke(node);
      } catch (IllegalAccessException | InvocationTargetException e) {
        continue;
      }
      if (m.getName().equals("getAdditionalProperties")) {
        if (value instanceof Map<?, ?> extra) {
          for (Object key : extra.keySet()) {
            found.add(path.isEmpty() ? key.toString() : path + "." + key);
          }
        }
        continue;
      }
      String field = Character.toLowerCase(m.getName().charAt(3)) + m.getName().substring(4);
      walk(value, path.isEmpty() ? field : path + "." + field, found);
    }
  }
}
