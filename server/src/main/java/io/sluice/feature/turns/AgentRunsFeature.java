package io.sluice.feature.turns;

import io.sluice.config.AgentRunsSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.Ticker;
import io.sluice.core.turn.AgentRunsPolicy;
import io.sluice.core.turn.TurnLedger;
import io.sluice.core.turn.TurnRetryCheck;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.store.memory.InMemoryTurnLedger;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisTurnLedger;
import java.util.List;

/**
 * Retries per tool per turn of an agent run (docs/mcp.md, "Retries per turn"), registered in one
 * place: its section ({@link AgentRunsSection}, {@code agentRuns}), its store port ({@link #TURNS}:
 * in memory bounded by {@code agentRuns.maxTurns}; on Redis across replicas, each turn's record
 * with a TTL) and its check ({@link TurnRetryCheck}, before the workflow's place, only while {@code
 * agentRuns.enabled}; a store that does not answer: {@code agentRuns.failureMode}, by default
 * {@code quotas.failureMode}). Its refusals are counted as every refusal is ({@code
 * sluice_decisions_total{reason="turn_retries"}}, the MCP tool's {@code refused} outcome).
 */
public final class AgentRunsFeature implements Feature {
  /** The turns' records: shared exactly when the backend is. */
  public static final StorePort<TurnLedger> TURNS =
      new StorePort<>() {
        @Override
        public String name() {
          return "turns";
        }

        @Override
        public TurnLedger memory(Ticker ticker, boolean isolated) {
          return isolated
              ? new InMemoryTurnLedger(Ticker.system(), 10_000)
              : new InMemoryTurnLedger(ticker, AgentRunsPolicy.DEFAULTS.maxTurns());
        }

        @Override
        public TurnLedger redis(RedisConnection redis) {
          return new RedisTurnLedger(redis);
        }

        @Override
        public void configure(TurnLedger port, SluiceConfig config) {
          if (port instanceof InMemoryTurnLedger m) { // Redis keeps what its keys' TTLs say
            m.resize(config.section(AgentRunsSection.SECTION).maxTurns());
          }
        }
      };

  @Override
  public List<StorePort<?>> storePorts() {
    return List.of(TURNS);
  }

  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    SluiceConfig config = s.config();
    AgentRunsPolicy policy =
        config
            .section(AgentRunsSection.SECTION)
            .failureModeOr(
                config.quotas().failureMode() == SluiceConfig.Quotas.FailureMode.CLOSED
                    ? TenantQuotas.FailureMode.CLOSED
                    : TenantQuotas.FailureMode.OPEN);
    if (!policy.enabled()) {
      return;
    }
    out.check(
        TurnRetryCheck.ORDER,
        TurnRetryCheck.factory(s.stores().port(TURNS), policy, config.quotas().keyPrefix()));
  }
}
