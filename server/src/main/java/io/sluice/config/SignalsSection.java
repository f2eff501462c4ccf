package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** The {@code signals} section: the trusted places each named signal is read from. */
final class SignalsSection {
  private SignalsSection() {}

  /**
   * The section, over the built-in signals and those the registered sections declare ({@link
   * ConfigSections#signals()}; any other key is an error naming the keys expected), each with its
   * sources in that order (none when the policy names none); a signal a registered section's
   * feature reads ({@link ConfigSection#signalHeaders}, {@link ConfigSection#signalAttributes})
   * that the policy leaves out is read from its default header or Envoy attribute.
   */
  static Map<Signal, List<Source>> read(Node s, ConfigSections sections) {
    Map<String, Signal> byKey = new LinkedHashMap<>();
    for (Signal sig : sections.signals()) {
      byKey.put(sig.key(), sig);
    }
    s.only(byKey.keySet());
    Map<Signal, List<Source>> out = new LinkedHashMap<>();
    for (Signal sig : byKey.values()) {
      out.put(sig, List.of());
    }
    for (var e : s.entries().entrySet()) {
      Signal sig = byKey.get(e.getKey());
      if (sig == null) {
        continue;
      }
      List<Source> sources = new ArrayList<>();
      for (Node item : e.getValue().items()) {
        Source src = source(item);
        if (src != null) {
          sources.add(src);
        }
      }
      out.put(sig, List.copyOf(sources));
    }
    // a registered section's defaults, for the signals the policy leaves out
    for (ConfigSection<?> section : sections.list()) {
      Map<String, Source> defaults = new LinkedHashMap<>();
      section
          .signalHeaders()
          .forEach((key, header) -> defaults.put(key, new Source.Header(header)));
      section.signalAttributes().forEach((key, a) -> defaults.put(key, new Source.Attribute(a)));
      defaults.forEach(
          (key, source) -> {
            Signal sig = byKey.get(key);
            if (sig != null && !s.get(key).present()) {
              out.put(sig, List.of(source));
            }
          });
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  private static @Nullable Source source(Node n) {
    n.only(Set.of("metadata", "header", "dynamicMetadata", "attribute"));
    if (!n.present() || !n.value().isObject() || n.value().size() != 1) {
      n.invalid(
          String.valueOf(n.json()),
          "exactly one of metadata: <key>, header: <name>, dynamicMetadata: {namespace, path},"
              + " attribute: <expression>");
      return null;
    }
    if (n.get("metadata").present()) {
      return new Source.Metadata(n.get("metadata").requiredString().toLowerCase(Locale.ROOT));
    }
    if (n.get("header").present()) {
      return new Source.Header(n.get("header").requiredString().toLowerCase(Locale.ROOT));
    }
    if (n.get("attribute").present()) {
      return new Source.Attribute(n.get("attribute").requiredString());
    }
    Node dm = n.get("dynamicMetadata").only(Set.of("namespace", "path"));
    String ns = dm.get("namespace").requiredString();
    List<String> path = new ArrayList<>();
    Node p = dm.get("path");
    if (p.present() && p.value().isTextual()) {
      path.addAll(List.of(p.value().asText().split("\\.")));
    } else {
      for (Node seg : p.items()) {
        path.add(seg.requiredString());
      }
    }
    if (path.isEmpty()) {
      p.invalid("[]", "a key path such as [payload, tenant] or payload.tenant");
    }
    return new Source.DynamicMetadata(ns, List.copyOf(path));
  }
}
