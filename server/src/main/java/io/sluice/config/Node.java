package io.sluice.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A cursor over the YAML tree that knows its path and collects errors instead of throwing, so
 * {@code sluice validate} can report every problem at once as {@code path: value (expected: ...)}.
 */
public final class Node {
  private static final Pattern DURATION = Pattern.compile("^(\\d+(?:\\.\\d+)?)(ms|s|m|h)$");
  private static final Pattern SIZE = Pattern.compile("^(\\d+)\\s*(B|KiB|MiB|GiB|KB|MB|GB)?$");

  /** An HTTP header name (RFC 9110 token, lower case). */
  static final Pattern HEADER_NAME = Pattern.compile("[a-z0-9!#$%&'*+.^_`|~-]+");

  private final @Nullable JsonNode json; // null: absent
  private final String path;
  private final List<String> errors;

  Node(@Nullable JsonNode json, String path, List<String> errors) {
    this.json = json;
    this.path = path;
    this.errors = errors;
  }

  public String path() {
    return path;
  }

  public boolean present() {
    return json != null && !json.isNull() && !json.isMissingNode();
  }

  /** The value, where the node is known to exist ({@link #present}, or an item or entry). */
  public JsonNode value() {
    return java.util.Objects.requireNonNull(json);
  }

  @Nullable JsonNode json() {
    return json;
  }

  public void error(String message) {
    errors.add(message);
  }

  public void invalid(String value, String expected) {
    // Never echo what a credential-like key holds (rateLimit.env.REDIS_AUTH: {...}).
    String key = path.substring(path.lastIndexOf('.') + 1);
    String shown = Secrets.isSecretKey(key) ? Secrets.MASK : Secrets.redactUrls(value);
    // The root has no path: name it, so every error still starts with the field it is about.
    errors.add(
        (path.isEmpty() ? "(document)" : path) + ": " + shown + " (expected: " + expected + ")");
  }

  private String child(String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  public Node get(String key) {
    JsonNode v = json != null && json.isObject() ? json.get(key) : null;
    return new Node(v, child(key), errors);
  }

  /** Reports keys other than {@code allowed}; a typo must never be silently ignored. */
  public Node only(Set<String> allowed) {
    if (present() && !value().isObject()) {
      invalid(value().getNodeType().name().toLowerCase(Locale.ROOT), "a mapping");
      return this;
    }
    if (present()) {
      Iterator<String> it = value().fieldNames();
      while (it.hasNext()) {
        String k = it.next();
        if (!allowed.contains(k)) {
          errors.add(
              child(k)
                  + ": unknown key (expected one of: "
                  + String.join(", ", new java.util.TreeSet<>(allowed))
                  + ")");
        }
      }
    }
    return this;
  }

  public String string(String def) {
    return java.util.Objects.requireNonNull(optionalString(def)); // asText is never null
  }

  /** As {@link #string}, with a default that may be null. */
  @Nullable String optionalString(@Nullable String def) {
    if (!present()) {
      return def;
    }
    if (!value().isTextual() && !value().isNumber() && !value().isBoolean()) {
      invalid(value().toString(), "a string");
      return def;
    }
    return value().asText();
  }

  public String requiredString() {
    if (!present()) {
      errors.add(path + ": missing (expected: a string)");
      return "";
    }
    return string("");
  }

  public boolean bool(boolean def) {
    if (!present()) {
      return def;
    }
    if (!value().isBoolean()) {
      invalid(value().toString(), "true or false");
      return def;
    }
    return value().asBoolean();
  }

  public long longValue(long def, long min, long max) {
    if (!present()) {
      return def;
    }
    if (!value().isIntegralNumber() || value().asLong() < min || value().asLong() > max) {
      invalid(value().toString(), "an integer in " + min + ".." + max);
      return def;
    }
    return value().asLong();
  }

  public int intValue(int def, int min, int max) {
    return (int) longValue(def, min, max);
  }

  public double doubleValue(double def, double min, double max) {
    if (!present()) {
      return def;
    }
    if (!value().isNumber() || value().asDouble() < min || value().asDouble() > max) {
      invalid(value().toString(), "a number in " + min + ".." + max);
      return def;
    }
    return value().asDouble();
  }

  public Duration duration(Duration def) {
    if (!present()) {
      return def;
    }
    String s = value().asText().trim();
    if (value().isIntegralNumber() && value().asLong() == 0) {
      return Duration.ZERO;
    }
    Matcher m = DURATION.matcher(s);
    if (!value().isTextual() || !m.matches()) {
      invalid(value().toString(), "a duration such as 250ms, 2s, 1.5s, 5m, 1h");
      return def;
    }
    double n = Double.parseDouble(m.group(1));
    double nanos =
        switch (m.group(2)) {
          case "ms" -> n * 1e6;
          case "s" -> n * 1e9;
          case "m" -> n * 60e9;
          default -> n * 3600e9;
        };
    return Duration.ofNanos((long) nanos);
  }

  public long bytes(long def) {
    if (!present()) {
      return def;
    }
    Matcher m = SIZE.matcher(value().asText().trim());
    if (!m.matches()) {
      invalid(value().toString(), "a size such as 1048576, 512KiB, 8MiB");
      return def;
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "B" : m.group(2);
    return switch (unit) {
      case "KiB" -> n << 10;
      case "MiB" -> n << 20;
      case "GiB" -> n << 30;
      case "KB" -> n * 1000;
      case "MB" -> n * 1000_000;
      case "GB" -> n * 1000_000_000L;
      default -> n;
    };
  }

  <E extends Enum<E>> E enumValue(Class<E> type, E def, Function<E, String> name) {
    return java.util.Objects.requireNonNull(optionalEnumValue(type, def, name)); // def is not null
  }

  /** As {@link #enumValue}, with a default that may be null. */
  <E extends Enum<E>> @Nullable E optionalEnumValue(
      Class<E> type, @Nullable E def, Function<E, String> name) {
    if (!present()) {
      return def;
    }
    String s = value().asText();
    List<String> names = new ArrayList<>();
    for (E e : type.getEnumConstants()) {
      if (name.apply(e).equals(s)) {
        return e;
      }
      names.add(name.apply(e));
    }
    invalid(value().toString(), "one of " + String.join(", ", names));
    return def;
  }

  /** Children of a mapping, in file order. */
  public Map<String, Node> entries() {
    Map<String, Node> out = new LinkedHashMap<>();
    if (!present()) {
      return out;
    }
    if (!value().isObject()) {
      invalid(value().getNodeType().name().toLowerCase(Locale.ROOT), "a mapping");
      return out;
    }
    for (Map.Entry<String, JsonNode> e : value().properties()) {
      out.put(e.getKey(), new Node(e.getValue(), child(e.getKey()), errors));
    }
    return out;
  }

  public List<Node> items() {
    List<Node> out = new ArrayList<>();
    if (!present()) {
      return out;
    }
    if (!value().isArray()) {
      invalid(value().getNodeType().name().toLowerCase(Locale.ROOT), "a list");
      return out;
    }
    for (int i = 0; i < value().size(); i++) {
      out.add(new Node(value().get(i), path + "[" + i + "]", errors));
    }
    return out;
  }

  /** Builds a value, turning a validating constructor's exception into an error at this path. */
  <T> @Nullable T build(java.util.function.Supplier<T> ctor) {
    try {
      return ctor.get();
    } catch (IllegalArgumentException e) {
      errors.add(e.getMessage());
      return null;
    }
  }
}
