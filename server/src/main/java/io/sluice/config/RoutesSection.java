package io.sluice.config;

import io.sluice.config.SluiceConfig.EstimateFrom;
import io.sluice.core.estimate.RequestFormat;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The {@code routes} section and its fallback, the {@code unmatched} section: how a request maps to
 * a pool, a class and a body format. Every error names its YAML path and the value expected.
 */
final class RoutesSection {
  private RoutesSection() {}

  /** The {@code routes} section, in file order. */
  static List<SluiceConfig.RouteRule> read(
      Node n, Set<String> pools, Set<String> classes, String defaultPool) {
    List<SluiceConfig.RouteRule> routes = new ArrayList<>();
    for (Node item : n.items()) {
      routes.add(route(item, pools, classes, defaultPool));
    }
    return routes;
  }

  private static SluiceConfig.RouteRule route(
      Node n, Set<String> pools, Set<String> classes, String defaultPool) {
    n.only(Set.of("name", "match", "pool", "class", "format", "estimate", "mode", "degrade"));
    Node m = n.get("match").only(Set.of("route", "path", "pathPrefix"));
    String name = n.get("name").requiredString();
    String pool = n.get("pool").string(defaultPool);
    String cls = n.get("class").requiredString();
    checkRef(n.get("pool"), pool, pools, "pools");
    checkRef(n.get("class"), cls, classes, "classes");
    String mr = m.get("route").optionalString(null);
    String mp = m.get("path").optionalString(null);
    String mpp = m.get("pathPrefix").optionalString(null);
    if (mr == null && mp == null && mpp == null) {
      m.invalid(String.valueOf(m.json()), "at least one of route, path, pathPrefix");
    }
    return new SluiceConfig.RouteRule(
        name,
        mr,
        mp,
        mpp,
        pool,
        cls,
        format(n.get("format")),
        estimateFrom(n.get("estimate")),
        PoolsSection.optionalMode(n.get("mode")),
        n.get("degrade").bool(true));
  }

  static SluiceConfig.Unmatched unmatched(
      Node n, Set<String> pools, Set<String> classes, String defaultPool) {
    n.only(Set.of("action", "pool", "class", "format", "estimate"));
    String action = n.get("action").string("admit");
    if (!action.equals("admit") && !action.equals("reject")) {
      n.get("action").invalid(action, "admit or reject");
    }
    String pool = n.get("pool").string(defaultPool);
    String fallbackClass =
        classes.isEmpty() ? "" : new ArrayList<>(classes).get(classes.size() - 1);
    String cls = n.get("class").string(fallbackClass);
    if (action.equals("admit") && !classes.isEmpty() && !pools.isEmpty()) {
      checkRef(n.get("pool"), pool, pools, "pools");
      checkRef(n.get("class"), cls, classes, "classes");
    }
    return new SluiceConfig.Unmatched(
        action.equals("reject"),
        pool,
        cls,
        format(n.get("format")),
        estimateFrom(n.get("estimate")));
  }

  /**
   * The classes a Responses-shaped request can have ({@link ConfigSection.Refs#responsesClasses}):
   * of the routes (and {@code unmatched}, when it admits) whose format is {@code openai-responses}
   * or {@code auto}, or any format when {@code signals.format} names a source; every class when
   * {@code signals.class} names one.
   */
  static Set<String> responsesClasses(
      List<SluiceConfig.RouteRule> routes,
      SluiceConfig.Unmatched unmatched,
      java.util.Map<SluiceConfig.Signal, List<SluiceConfig.Source>> signals,
      Set<String> classes) {
    boolean anyFormat = !signals.getOrDefault(SluiceConfig.Signal.FORMAT, List.of()).isEmpty();
    boolean anyClass = !signals.getOrDefault(SluiceConfig.Signal.CLASS, List.of()).isEmpty();
    Set<String> out = new java.util.LinkedHashSet<>();
    for (SluiceConfig.RouteRule r : routes) {
      if (anyFormat || responsesShaped(r.format())) {
        out.add(r.requestClass());
      }
    }
    if (!unmatched.reject() && (anyFormat || responsesShaped(unmatched.format()))) {
      out.add(unmatched.requestClass());
    }
    return anyClass && !out.isEmpty() ? Set.copyOf(classes) : Set.copyOf(out);
  }

  private static boolean responsesShaped(RequestFormat f) {
    return f == RequestFormat.OPENAI_RESPONSES || f == RequestFormat.AUTO;
  }

  private static void checkRef(Node at, String value, Set<String> names, String section) {
    if (!names.contains(value)) {
      at.invalid(value, "a name defined under " + section + ": " + String.join(", ", names));
    }
  }

  private static RequestFormat format(Node n) {
    if (!n.present()) {
      return RequestFormat.AUTO;
    }
    try {
      return RequestFormat.fromConfigName(n.string("auto"));
    } catch (IllegalArgumentException e) {
      List<String> names = new ArrayList<>();
      for (RequestFormat f : RequestFormat.values()) {
        names.add(f.configName());
      }
      n.invalid(n.value().toString(), "one of " + String.join(", ", names));
      return RequestFormat.AUTO;
    }
  }

  private static EstimateFrom estimateFrom(Node n) {
    return n.enumValue(
        EstimateFrom.class, EstimateFrom.BODY, e -> e.name().toLowerCase(Locale.ROOT));
  }
}
