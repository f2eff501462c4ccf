package io.sluice.rls.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Loads envoyproxy/ratelimit YAML (one domain per file) into a {@link RateLimitConfig}, with the
 * reference's validation and error texts ({@code <file key>: <error>}).
 *
 * <p>Sluice extensions accepted in a descriptor: {@code rate_limits} (a list of limits, instead of
 * {@code rate_limit}); and inside a limit {@code unit_multiplier}, {@code algorithm} ({@code
 * fixed_window} | {@code token_bucket}) and {@code failure_mode} ({@code open} | {@code closed} |
 * {@code local} | {@code error}). Reference keys {@code quota_mode}, {@code value_to_metric} and
 * {@code metadata} are accepted; {@code value_to_metric} and {@code metadata} have no effect here.
 */
public final class RateLimitConfigLoader {
  /** One file to load: its goruntime-style key (relative path with '/' as '.') and its text. */
  public record ConfigFile(String key, String content) {}

  private static final Set<String> VALID_KEYS =
      Set.of(
          "domain",
          "key",
          "value",
          "descriptors",
          "rate_limit",
          "unit",
          "requests_per_unit",
          "unlimited",
          "shadow_mode",
          "quota_mode",
          "name",
          "replaces",
          "detailed_metric",
          "value_to_metric",
          "share_threshold",
          "metadata",
          // Sluice extensions
          "rate_limits",
          "unit_multiplier",
          "algorithm",
          "failure_mode");

  private static final YAMLMapper YAML =
      YAMLMapper.builder(new YAMLFactory())
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .build();

  private RateLimitConfigLoader() {}

  /** Builds one config from several files; any error rejects the whole set. */
  public static RateLimitConfig build(List<ConfigFile> files, boolean mergeDomainConfigs) {
    Map<String, DescriptorNode> domains = new LinkedHashMap<>();
    List<String> keys = new ArrayList<>();
    for (ConfigFile f : files) {
      load(f, domains, mergeDomainConfigs);
      keys.add(f.key());
    }
    return new RateLimitConfig(domains, keys);
  }

  /** Reads and builds the directory the settings point to. */
  public static RateLimitConfig loadDirectory(Path dir, boolean ignoreDotFiles, boolean merge) {
    return build(readDirectory(dir, ignoreDotFiles), merge);
  }

  /**
   * Every regular file under {@code dir} (recursively, following symlinks, sorted by path), keyed
   * like goruntime: relative path with '/' turned into '.'. Entries whose name starts with {@code
   * ..} (Kubernetes' atomic-writer directories such as {@code ..data}) are skipped so a ConfigMap
   * mount is not loaded twice.
   */
  public static List<ConfigFile> readDirectory(Path dir, boolean ignoreDotFiles) {
    if (!Files.isDirectory(dir)) {
      throw new RateLimitConfigException(dir + ": config directory does not exist");
    }
    List<ConfigFile> out = new ArrayList<>();
    try (Stream<Path> paths = Files.walk(dir, FileVisitOption.FOLLOW_LINKS)) {
      List<Path> files =
          paths
              .filter(p -> !p.equals(dir))
              .filter(p -> !skipped(dir.relativize(p), ignoreDotFiles))
              .filter(Files::isRegularFile)
              .sorted(Comparator.comparing(Path::toString))
              .toList();
      for (Path p : files) {
        String key = dir.relativize(p).toString().replace('/', '.');
        out.add(new ConfigFile(key, Files.readString(p, StandardCharsets.UTF_8)));
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      throw new RateLimitConfigException(
          dir + ": error reading config directory: " + e.getMessage(), e);
    }
    return out;
  }

  private static boolean skipped(Path relative, boolean ignoreDotFiles) {
    for (Path part : relative) {
      String n = part.toString();
      if (n.startsWith("..") || (ignoreDotFiles && n.startsWith("."))) {
        return true;
      }
    }
    return false;
  }

  private static void load(ConfigFile f, Map<String, DescriptorNode> domains, boolean merge) {
    JsonNode root;
    try {
      root = YAML.readTree(f.content());
    } catch (IOException e) {
      throw RateLimitConfigException.of(
          f.key(),
          "error loading config file: "
              + (e instanceof com.fasterxml.jackson.core.JsonProcessingException j
                  ? j.getOriginalMessage()
                  : e.getMessage()));
    }
    if (root == null || root.isMissingNode() || root.isNull()) {
      root = YAML.createObjectNode();
    }
    if (!root.isObject()) {
      throw RateLimitConfigException.of(
          f.key(),
          "error loading config file: cannot unmarshal "
              + root.getNodeType().name().toLowerCase(java.util.Locale.ROOT)
              + " into a map");
    }
    validateKeys(f.key(), root);
    String domain = text(f.key(), root, "domain");
    if (domain.isEmpty()) {
      throw RateLimitConfigException.of(f.key(), "config file cannot have empty domain");
    }
    DescriptorNode node = domains.get(domain);
    if (node != null && !merge) {
      throw RateLimitConfigException.of(
          f.key(), "duplicate domain '" + domain + "' in config file");
    }
    if (node == null) {
      node = DescriptorNode.root();
      domains.put(domain, node);
    }
    loadDescriptors(f.key(), node, domain + ".", "", list(f.key(), root, "descriptors"));
  }

  private static void loadDescriptors(
      String file,
      DescriptorNode parent,
      String parentKey,
      String statParent,
      List<JsonNode> list) {
    for (JsonNode d : list) {
      String key = text(file, d, "key");
      if (key.isEmpty()) {
        throw RateLimitConfigException.of(file, "descriptor has empty key");
      }
      String value = text(file, d, "value");
      String finalKey = value.isEmpty() ? key : key + "_" + value;
      String fullKey = parentKey + finalKey;
      if (parent.children.containsKey(finalKey)) {
        throw RateLimitConfigException.of(
            file, "duplicate descriptor composite key '" + fullKey + "'");
      }
      boolean shareThreshold = bool(file, d, "share_threshold");
      if (shareThreshold && !value.contains("*")) {
        throw RateLimitConfigException.of(
            file,
            "share_threshold can only be used with wildcard values (containing '*'), but found key '"
                + fullKey
                + "'");
      }
      String statKey = statParent + finalKey;
      boolean shadow = bool(file, d, "shadow_mode");
      boolean quota = bool(file, d, "quota_mode");
      boolean detailed = bool(file, d, "detailed_metric");
      List<JsonNode> limitNodes = new ArrayList<>();
      if (d.hasNonNull("rate_limit")) {
        JsonNode rl = d.get("rate_limit");
        if (!rl.isObject()) {
          throw RateLimitConfigException.of(
              file, "error loading config file: rate_limit: " + rl + " (expected: a map)");
        }
        limitNodes.add(rl);
      }
      if (d.has("rate_limits")) {
        if (!limitNodes.isEmpty()) {
          throw RateLimitConfigException.of(
              file, "descriptor '" + fullKey + "' should not have both rate_limit and rate_limits");
        }
        limitNodes.addAll(list(file, d, "rate_limits"));
      }
      List<LimitSpec> limits = new ArrayList<>();
      for (int i = 0; i < limitNodes.size(); i++) {
        limits.add(limit(file, limitNodes.get(i), i, shadow, quota, detailed, statKey));
      }
      DescriptorNode node = new DescriptorNode(finalKey, value, shareThreshold, limits);
      loadDescriptors(file, node, fullKey + ".", statKey + ".", list(file, d, "descriptors"));
      parent.children.put(finalKey, node);
      if (value.contains("*")) {
        parent.wildcards.add(node);
      }
    }
  }

  private static LimitSpec limit(
      String file,
      JsonNode rl,
      int index,
      boolean shadow,
      boolean quota,
      boolean detailed,
      String statKey) {
    boolean unlimited = bool(file, rl, "unlimited");
    String unitText = text(file, rl, "unit");
    Optional<RateLimitUnit> unit = RateLimitUnit.parse(unitText);
    if (unlimited) {
      if (unit.isPresent()) {
        throw RateLimitConfigException.of(
            file, "should not specify rate limit unit when unlimited");
      }
    } else if (unit.isEmpty()) {
      throw RateLimitConfigException.of(file, "invalid rate limit unit '" + unitText + "'");
    }
    long rpu = unsigned(file, rl, "requests_per_unit", 0xFFFF_FFFFL, 0);
    long multiplier = unsigned(file, rl, "unit_multiplier", Integer.MAX_VALUE, 1);
    if (multiplier < 1) {
      throw RateLimitConfigException.of(
          file, "error loading config file: unit_multiplier: 0 (expected: >= 1)");
    }
    String name = text(file, rl, "name");
    List<String> replaces = new ArrayList<>();
    for (JsonNode r : list(file, rl, "replaces")) {
      String n = text(file, r, "name");
      if (n.isEmpty()) {
        throw RateLimitConfigException.of(file, "should not have an empty replaces entry");
      }
      if (n.equals(name)) {
        throw RateLimitConfigException.of(
            file, "replaces should not contain name of same descriptor");
      }
      replaces.add(n);
    }
    String algo = text(file, rl, "algorithm");
    Algorithm algorithm =
        switch (algo) {
          case "", "fixed_window" -> Algorithm.FIXED_WINDOW;
          case "token_bucket" -> Algorithm.TOKEN_BUCKET;
          default ->
              throw RateLimitConfigException.of(
                  file, "algorithm: " + algo + " (expected: fixed_window or token_bucket)");
        };
    Optional<FailureMode> failureMode = Optional.empty();
    String fm = text(file, rl, "failure_mode");
    if (!fm.isEmpty()) {
      try {
        failureMode = Optional.of(FailureMode.parse("failure_mode", fm));
      } catch (IllegalArgumentException e) {
        throw RateLimitConfigException.of(file, e.getMessage());
      }
    }
    return new LimitSpec(
        name,
        unit.orElse(null),
        rpu,
        multiplier,
        unlimited,
        shadow,
        quota,
        detailed,
        replaces,
        algorithm,
        failureMode,
        index,
        statKey);
  }

  private static void validateKeys(String file, JsonNode map) {
    Iterator<Map.Entry<String, JsonNode>> it = map.properties().iterator();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!VALID_KEYS.contains(e.getKey())) {
        throw RateLimitConfigException.of(file, "config error, unknown key '" + e.getKey() + "'");
      }
      if (e.getKey().equals("metadata")) {
        continue; // free-form
      }
      JsonNode v = e.getValue();
      switch (v.getNodeType()) {
        case ARRAY -> {
          for (JsonNode item : v) {
            if (!item.isObject()) {
              throw RateLimitConfigException.of(
                  file,
                  "config error, yaml file contains list of type other than map: " + item.asText());
            }
            validateKeys(file, item);
          }
        }
        case OBJECT -> validateKeys(file, v);
        case STRING, BOOLEAN, NULL -> {}
        case NUMBER -> {
          if (!v.isIntegralNumber()) {
            throw RateLimitConfigException.of(file, "error checking config");
          }
        }
        default -> throw RateLimitConfigException.of(file, "error checking config");
      }
    }
  }

  private static String text(String file, JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      return "";
    }
    if (!v.isValueNode()) {
      throw RateLimitConfigException.of(
          file, "error loading config file: " + field + ": " + v + " (expected: a string)");
    }
    return v.asText();
  }

  private static boolean bool(String file, JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      return false;
    }
    if (v.getNodeType() != JsonNodeType.BOOLEAN) {
      throw RateLimitConfigException.of(
          file,
          "error loading config file: " + field + ": " + v.asText() + " (expected: true or false)");
    }
    return v.booleanValue();
  }

  private static long unsigned(String file, JsonNode node, String field, long max, long dflt) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.isIntegralNumber()
        || v.bigIntegerValue().signum() < 0
        || v.bigIntegerValue().compareTo(java.math.BigInteger.valueOf(max)) > 0) {
      throw RateLimitConfigException.of(
          file,
          "error loading config file: "
              + field
              + ": "
              + v.asText()
              + " (expected: an integer 0.."
              + max
              + ")");
    }
    return v.longValue();
  }

  private static List<JsonNode> list(String file, JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      return List.of();
    }
    if (!v.isArray()) {
      throw RateLimitConfigException.of(
          file, "error loading config file: " + field + ": " + v + " (expected: a list)");
    }
    List<JsonNode> out = new ArrayList<>();
    v.forEach(out::add);
    return out;
  }
}
