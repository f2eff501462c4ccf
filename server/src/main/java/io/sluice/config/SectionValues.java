package io.sluice.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The values of a snapshot's registered {@link ConfigSection}s, by section name, in registration
 * order; a section not registered when the policy was read answers its {@link
 * ConfigSection#defaults()}. Immutable; equal when the values are.
 */
public final class SectionValues {
  /** No registered section. */
  public static final SectionValues NONE = new SectionValues(Map.of());

  private final Map<String, Entry<?>> entries;

  /** One section and the value read for it. */
  private record Entry<T>(ConfigSection<T> section, T value) {
    JsonNode write() {
      return section.write(value);
    }

    Set<String> signals() {
      return section.signals(value);
    }

    Set<String> recordSignals() {
      return section.recordSignals(value);
    }
  }

  private SectionValues(Map<String, Entry<?>> entries) {
    this.entries = entries;
  }

  /** Reads every section of {@code registered} from the policy's root. */
  static SectionValues read(Node root, ConfigSections registered, ConfigSection.Refs refs) {
    Map<String, Entry<?>> entries = new LinkedHashMap<>();
    for (ConfigSection<?> s : registered.list()) {
      Entry<?> e = entry(s, root.get(s.name()), refs);
      for (String key : e.signals()) {
        if (!registered.hasSignal(key)) {
          throw new IllegalStateException(
              "section " + s.name() + " reads undeclared signal " + key);
        }
      }
      entries.put(s.name(), e);
    }
    return new SectionValues(Collections.unmodifiableMap(entries));
  }

  private static <T> Entry<T> entry(ConfigSection<T> s, Node n, ConfigSection.Refs refs) {
    return new Entry<>(s, Objects.requireNonNull(s.read(n, refs), s.name()));
  }

  /** The section's value, or its defaults when it was not registered. */
  public <T> T get(ConfigSection<T> s) {
    Entry<?> e = entries.get(s.name());
    if (e == null) {
      return s.defaults();
    }
    @SuppressWarnings("unchecked") // read by a section of that name: of that section's type
    T v = (T) e.value();
    return v;
  }

  /** The section names, in registration order. */
  public Set<String> names() {
    return entries.keySet();
  }

  /** Writes each section under its name ({@link ConfigSection#write}), in order. */
  void writeTo(ObjectNode root) {
    entries.forEach((name, e) -> root.set(name, e.write()));
  }

  /** The signals the sections' features read per request ({@link ConfigSection#signals}). */
  public Set<String> signals() {
    Set<String> out = new LinkedHashSet<>();
    entries.values().forEach(e -> out.addAll(e.signals()));
    return out;
  }

  /** The signals the sections' features read only for the decision record. */
  public Set<String> recordSignals() {
    Set<String> out = new LinkedHashSet<>();
    entries.values().forEach(e -> out.addAll(e.recordSignals()));
    return out;
  }

  /** The signals read only beside another ({@link ConfigSection#signalsBeside}), by key. */
  public Map<String, String> signalsBeside() {
    Map<String, String> out = new LinkedHashMap<>();
    entries.values().forEach(e -> out.putAll(e.section().signalsBeside()));
    return out;
  }

  private Map<String, Object> values() {
    Map<String, Object> v = new LinkedHashMap<>();
    entries.forEach((name, e) -> v.put(name, e.value()));
    return v;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof SectionValues other && values().equals(other.values());
  }

  @Override
  public int hashCode() {
    return values().hashCode();
  }

  @Override
  public String toString() {
    return values().toString();
  }
}
