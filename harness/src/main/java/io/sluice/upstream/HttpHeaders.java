package io.sluice.upstream;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Ordered HTTP header multimap with lower-case names, as Envoy holds them (pseudo-headers such as
 * {@code :method} included). Mutable; {@link #copy()} before handing it to another party.
 */
public final class HttpHeaders {
  private final List<Map.Entry<String, String>> entries = new ArrayList<>();

  public static HttpHeaders of(String... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException(
          "namesAndValues: odd length " + namesAndValues.length + " (expected: name, value pairs)");
    }
    HttpHeaders headers = new HttpHeaders();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      headers.add(namesAndValues[i], namesAndValues[i + 1]);
    }
    return headers;
  }

  /** Appends a value (keeps existing values of the same name). */
  public HttpHeaders add(String name, String value) {
    entries.add(Map.entry(name.toLowerCase(Locale.ROOT), value));
    return this;
  }

  /** Replaces every value of {@code name} with one value, keeping the first position. */
  public HttpHeaders set(String name, String value) {
    String key = name.toLowerCase(Locale.ROOT);
    int at = -1;
    for (int i = 0; i < entries.size(); i++) {
      if (entries.get(i).getKey().equals(key)) {
        at = i;
        break;
      }
    }
    remove(key);
    if (at < 0 || at > entries.size()) {
      entries.add(Map.entry(key, value));
    } else {
      entries.add(at, Map.entry(key, value));
    }
    return this;
  }

  public HttpHeaders remove(String name) {
    String key = name.toLowerCase(Locale.ROOT);
    entries.removeIf(e -> e.getKey().equals(key));
    return this;
  }

  public boolean contains(String name) {
    return first(name).isPresent();
  }

  public Optional<String> first(String name) {
    String key = name.toLowerCase(Locale.ROOT);
    for (Map.Entry<String, String> e : entries) {
      if (e.getKey().equals(key)) {
        return Optional.of(e.getValue());
      }
    }
    return Optional.empty();
  }

  public List<String> all(String name) {
    String key = name.toLowerCase(Locale.ROOT);
    List<String> values = new ArrayList<>();
    for (Map.Entry<String, String> e : entries) {
      if (e.getKey().equals(key)) {
        values.add(e.getValue());
      }
    }
    return values;
  }

  /** Entries in order; unmodifiable view. */
  public List<Map.Entry<String, String>> entries() {
    return Collections.unmodifiableList(entries);
  }

  public HttpHeaders copy() {
    HttpHeaders copy = new HttpHeaders();
    copy.entries.addAll(entries);
    return copy;
  }

  public int size() {
    return entries.size();
  }

  @Override
  public String toString() {
    return entries.toString();
  }
}
