package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The {@code upstreamErrors} section (docs/configuration.md, "Upstream errors"): how the upstream's
 * own failures reach the client. Every error names its YAML path and the value expected.
 *
 * <pre>
 * upstreamErrors:
 *   rewrite: true            # Sluice's typed answer (default); false: the upstream's, untouched
 *   keepProviderBody: false  # true: the provider's status and body, with Sluice's headers
 *   retryAfter: 1s           # when the upstream gives none, and the least given
 *   pools:  {gpu: {keepProviderBody: true}}
 *   routes: {chat: {rewrite: false}}
 * </pre>
 */
public final class UpstreamErrorsSection implements ConfigSection<UpstreamErrorsPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Set<String> RULE_KEYS = Set.of("rewrite", "keepProviderBody", "retryAfter");

  /** The section, to read its value: {@code config.section(UpstreamErrorsSection.SECTION)}. */
  public static final UpstreamErrorsSection SECTION = new UpstreamErrorsSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public UpstreamErrorsSection() {}

  @Override
  public String name() {
    return "upstreamErrors";
  }

  @Override
  public UpstreamErrorsPolicy defaults() {
    return UpstreamErrorsPolicy.DEFAULTS;
  }

  @Override
  public UpstreamErrorsPolicy read(Node n, Refs refs) {
    n.only(Set.of("rewrite", "keepProviderBody", "retryAfter", "pools", "routes"));
    UpstreamErrorsPolicy.Rule defaults = rule(n, UpstreamErrorsPolicy.Rule.DEFAULTS);
    return new UpstreamErrorsPolicy(
        defaults,
        overrides(n.get("pools"), refs.pools(), "the name of a pool in pools", defaults),
        overrides(n.get("routes"), refs.routes(), "the name of a route in routes", defaults));
  }

  private static Map<String, UpstreamErrorsPolicy.Rule> overrides(
      Node n, Set<String> names, String expected, UpstreamErrorsPolicy.Rule defaults) {
    Map<String, UpstreamErrorsPolicy.Rule> out = new LinkedHashMap<>();
    for (var e : n.entries().entrySet()) {
      Node r = e.getValue().only(RULE_KEYS);
      if (!names.contains(e.getKey())) {
        r.invalid(e.getKey(), expected);
        continue;
      }
      out.put(e.getKey(), rule(r, defaults));
    }
    return out;
  }

  /** A rule's keys, each defaulting to {@code d}'s. */
  private static UpstreamErrorsPolicy.Rule rule(Node n, UpstreamErrorsPolicy.Rule d) {
    Duration retryAfter = n.get("retryAfter").duration(d.retryAfter());
    if (retryAfter.compareTo(Duration.ofSeconds(1)) < 0
        || retryAfter.compareTo(Duration.ofHours(1)) > 0) {
      n.get("retryAfter").invalid(ConfigWriter.duration(retryAfter), "a duration in 1s..1h");
      retryAfter = d.retryAfter();
    }
    return new UpstreamErrorsPolicy.Rule(
        n.get("rewrite").bool(d.rewrite()),
        n.get("keepProviderBody").bool(d.keepProviderBody()),
        retryAfter);
  }

  @Override
  public ObjectNode write(UpstreamErrorsPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    put(n, p.defaults());
    ObjectNode pools = n.putObject("pools");
    p.pools().forEach((name, r) -> put(pools.putObject(name), r));
    ObjectNode routes = n.putObject("routes");
    p.routes().forEach((name, r) -> put(routes.putObject(name), r));
    return n;
  }

  private static void put(ObjectNode n, UpstreamErrorsPolicy.Rule r) {
    n.put("rewrite", r.rewrite())
        .put("keepProviderBody", r.keepProviderBody())
        .put("retryAfter", ConfigWriter.duration(r.retryAfter()));
  }
}
