package io.sluice.envoyconfig;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.google.protobuf.Any;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Parses Envoy YAML the way Envoy does (YAML to JSON to proto3 JSON mapping), strictly: an unknown
 * field or an unknown {@code @type} fails. Every {@code Any} is resolved through a type registry
 * holding every message of java-control-plane's api jar, so nested typed configs are checked too.
 */
public final class EnvoyBootstrapParser {

  /** Outer classes of the generated proto files in the api jar (one per .proto file). */
  private static final Pattern OUTER_CLASS =
      Pattern.compile(
          "^(io/envoyproxy/envoy|com/github/xds|com/github/udpa)/[^$]+(Proto|OuterClass)\\.class$");

  private static final YAMLMapper YAML = new YAMLMapper();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonFormat.TypeRegistry REGISTRY = buildRegistry();

  private EnvoyBootstrapParser() {}

  /** The registry with every message type of the Envoy api jar and its dependencies. */
  public static JsonFormat.TypeRegistry typeRegistry() {
    return REGISTRY;
  }

  public static Bootstrap parseFile(Path yamlFile) throws IOException {
    return parseYaml(Files.readString(yamlFile));
  }

  /** YAML text to a Bootstrap; throws {@link InvalidProtocolBufferException} on any typo. */
  public static Bootstrap parseYaml(String yaml) throws IOException {
    JsonNode tree = YAML.readTree(yaml);
    if (tree == null || !tree.isObject()) {
      throw new InvalidProtocolBufferException("bootstrap: not a YAML mapping");
    }
    Bootstrap.Builder builder = Bootstrap.newBuilder();
    JsonFormat.parser().usingTypeRegistry(REGISTRY).merge(JSON.writeValueAsString(tree), builder);
    return builder.build();
  }

  /** Every {@code Any} inside {@code message}, depth first, including those inside Anys. */
  public static List<Any> allAnys(Message message) {
    List<Any> found = new ArrayList<>();
    collectAnys(message, found);
    return found;
  }

  /** Unpacks {@code any} with the registry; fails if its type is not a known Envoy message. */
  public static Message unpack(Any any) {
    String url = any.getTypeUrl();
    Descriptor type = REGISTRY.find(url.substring(url.lastIndexOf('/') + 1));
    if (type == null) {
      throw new IllegalArgumentException(
          "typed_config: " + any.getTypeUrl() + " (expected: a message of the Envoy api)");
    }
    try {
      return com.google.protobuf.DynamicMessage.parseFrom(type, any.getValue());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("typed_config: " + any.getTypeUrl(), e);
    }
  }

  private static void collectAnys(Message message, List<Any> found) {
    if (message.getDescriptorForType().getFullName().equals(Any.getDescriptor().getFullName())) {
      Any any = message instanceof Any ? (Any) message : toAny(message);
      found.add(any);
      collectAnys(unpack(any), found);
      return;
    }
    for (Map.Entry<FieldDescriptor, Object> field : message.getAllFields().entrySet()) {
      if (field.getKey().getJavaType() != FieldDescriptor.JavaType.MESSAGE) {
        continue;
      }
      if (field.getKey().isRepeated()) {
        for (Object element : (List<?>) field.getValue()) {
          collectAnys((Message) element, found);
        }
      } else {
        collectAnys((Message) field.getValue(), found);
      }
    }
  }

  private static Any toAny(Message dynamicAny) {
    try {
      return Any.parseFrom(dynamicAny.toByteString());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
  }

  private static JsonFormat.TypeRegistry buildRegistry() {
    JsonFormat.TypeRegistry.Builder builder = JsonFormat.TypeRegistry.newBuilder();
    ClassLoader loader = Bootstrap.class.getClassLoader();
    try (ZipFile jar = new ZipFile(apiJar().toFile())) {
      Enumeration<? extends ZipEntry> entries = jar.entries();
      while (entries.hasMoreElements()) {
        String name = entries.nextElement().getName();
        if (!OUTER_CLASS.matcher(name).matches()) {
          continue;
        }
        String className = name.substring(0, name.length() - ".class".length()).replace('/', '.');
        FileDescriptor file = fileDescriptorOf(Class.forName(className, false, loader));
        if (file != null && !file.getMessageTypes().isEmpty()) {
          builder.add(file.getMessageTypes()); // adds the whole file and its dependencies
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
    return builder.build();
  }

  private static FileDescriptor fileDescriptorOf(Class<?> outerClass)
      throws ReflectiveOperationException {
    Method getDescriptor;
    try {
      getDescriptor = outerClass.getMethod("getDescriptor");
    } catch (NoSuchMethodException e) {
      return null;
    }
    if (!Modifier.isStatic(getDescriptor.getModifiers())
        || getDescriptor.getReturnType() != FileDescriptor.class) {
      return null;
    }
    return (FileDescriptor) getDescriptor.invoke(null);
  }

  private static Path apiJar() {
    try {
      return Path.of(Bootstrap.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
