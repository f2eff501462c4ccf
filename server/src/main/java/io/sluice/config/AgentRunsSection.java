package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.turn.AgentRunsPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The {@code agentRuns} section (docs/mcp.md, "Retries per turn"; docs/configuration.md): retries
 * of shed calls per tool per turn of an agent run. Its run is the built-in guarded {@code workflow}
 * signal, its turn the guarded {@code turn} signal it declares: both must come from a source the
 * gateway sets (a client that chose its turn would give itself fresh retries).
 */
public final class AgentRunsSection implements ConfigSection<AgentRunsPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(AgentRunsSection.SECTION)}. */
  public static final AgentRunsSection SECTION = new AgentRunsSection();

  /** The turn of an agent run ({@code signals.turn}), guarded. */
  public static final SluiceConfig.Signal TURN = SluiceConfig.Signal.guarded(AgentRunsPolicy.TURN);

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public AgentRunsSection() {}

  @Override
  public String name() {
    return "agentRuns";
  }

  @Override
  public AgentRunsPolicy defaults() {
    return AgentRunsPolicy.DEFAULTS;
  }

  @Override
  public List<SluiceConfig.Signal> declaredSignals() {
    return List.of(TURN);
  }

  /** The run and its turn, while the section is on. */
  @Override
  public Set<String> signals(AgentRunsPolicy p) {
    return p.enabled() ? Set.of(SluiceConfig.Signal.WORKFLOW.key(), TURN.key()) : Set.of();
  }

  @Override
  public AgentRunsPolicy read(Node n, Refs refs) {
    AgentRunsPolicy d = AgentRunsPolicy.DEFAULTS;
    n.only(Set.of("enabled", "maxRetriesPerTool", "turnTtl", "maxTurns", "failureMode"));
    Duration ttl = n.get("turnTtl").duration(d.turnTtl());
    if (ttl.compareTo(Duration.ofSeconds(1)) < 0 || ttl.compareTo(Duration.ofHours(24)) > 0) {
      n.get("turnTtl").invalid(ConfigWriter.duration(ttl), "a duration in 1s..24h");
      ttl = d.turnTtl();
    }
    TenantQuotas.FailureMode mode =
        n.get("failureMode")
            .optionalEnumValue(
                TenantQuotas.FailureMode.class, null, m -> m.name().toLowerCase(Locale.ROOT));
    return new AgentRunsPolicy(
        n.get("enabled").bool(d.enabled()),
        n.get("maxRetriesPerTool").intValue(d.maxRetriesPerTool(), 0, 100),
        ttl,
        n.get("maxTurns").intValue(d.maxTurns(), 1, 10_000_000),
        mode);
  }

  @Override
  public ObjectNode write(AgentRunsPolicy p) {
    ObjectNode n =
        MAPPER
            .createObjectNode()
            .put("enabled", p.enabled())
            .put("maxRetriesPerTool", p.maxRetriesPerTool())
            .put("turnTtl", ConfigWriter.duration(p.turnTtl()))
            .put("maxTurns", p.maxTurns());
    if (p.failureMode() != null) {
      n.put("failureMode", p.failureMode().name().toLowerCase(Locale.ROOT));
    }
    return n;
  }
}
