package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.permit.PermitsPolicy;
import java.time.Duration;
import java.util.Set;

/**
 * The {@code permits} section (docs/permits.md, docs/configuration.md "permits"): the permit API
 * for stages Envoy does not front. Read at start (the service is bound then); every error names its
 * YAML path and the value expected.
 */
public final class PermitsSection implements ConfigSection<PermitsPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(PermitsSection.SECTION)}. */
  public static final PermitsSection SECTION = new PermitsSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public PermitsSection() {}

  @Override
  public String name() {
    return "permits";
  }

  @Override
  public PermitsPolicy defaults() {
    return PermitsPolicy.DEFAULTS;
  }

  @Override
  public PermitsPolicy read(Node n, Refs refs) {
    PermitsPolicy d = PermitsPolicy.DEFAULTS;
    n.only(Set.of("enabled", "lease", "maxLeases"));
    Duration lease = n.get("lease").duration(d.lease());
    if (lease.compareTo(Duration.ofSeconds(1)) < 0 || lease.compareTo(Duration.ofHours(1)) > 0) {
      n.get("lease").invalid(ConfigWriter.duration(lease), "a duration in 1s..1h");
      lease = d.lease();
    }
    return new PermitsPolicy(
        n.get("enabled").bool(d.enabled()),
        lease,
        n.get("maxLeases").intValue(d.maxLeases(), 1, 1_000_000));
  }

  @Override
  public ObjectNode write(PermitsPolicy p) {
    return MAPPER
        .createObjectNode()
        .put("enabled", p.enabled())
        .put("lease", ConfigWriter.duration(p.lease()))
        .put("maxLeases", p.maxLeases());
  }
}
