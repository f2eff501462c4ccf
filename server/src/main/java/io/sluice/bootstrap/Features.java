package io.sluice.bootstrap;

import io.sluice.feature.Feature;
import io.sluice.feature.StorePort;
import io.sluice.feature.budget.BudgetFeature;
import io.sluice.feature.intake.IntakeFeature;
import io.sluice.feature.mcp.McpFeature;
import io.sluice.feature.nativeai.NativeMetadataFeature;
import io.sluice.feature.retry.RetryFeature;
import io.sluice.feature.telemetry.TelemetryFeature;
import io.sluice.feature.turns.AgentRunsFeature;
import java.util.ArrayList;
import java.util.List;

/**
 * The feature modules of this server, in order: the registration line of a feature (its store ports
 * are built by {@link Stores}, its checks, listeners and record parts join each snapshot's runtime
 * in {@link RuntimeFactory}). Its config section registers itself in {@code
 * META-INF/services/io.sluice.config.ConfigSection}, so that every reader of a policy knows it.
 */
final class Features {
  /** The features, in registration order (checks of equal order keep it). */
  static final List<Feature> ALL =
      List.of(
          new RetryFeature(),
          new IntakeFeature(),
          new BudgetFeature(),
          new McpFeature(),
          new TelemetryFeature(),
          new NativeMetadataFeature(),
          new AgentRunsFeature());

  private Features() {}

  /** Every feature's store ports, in order. */
  static List<StorePort<?>> storePorts() {
    List<StorePort<?>> ports = new ArrayList<>();
    ALL.forEach(f -> ports.addAll(f.storePorts()));
    return List.copyOf(ports);
  }
}
