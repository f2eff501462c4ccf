package io.sluice.rls;

import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.bootstrap.Stores;
import io.sluice.core.time.Ticker;
import io.sluice.rls.config.RlsSettings;
import java.time.Clock;
import java.util.List;
import java.util.Map;

/** The rate limit service on the stores the bootstrap builds from the same environment. */
final class WiredRls {
  private WiredRls() {}

  /**
   * @param closeables receives the stores (the module does not own them): close it after the module
   */
  static RlsModule create(
      Map<String, String> env,
      MeterRegistry registry,
      Clock clock,
      Ticker ticker,
      List<AutoCloseable> closeables) {
    RlsSettings settings = RlsSettings.fromEnv(env);
    Stores stores = Stores.fromEnv(env, clock, ticker, registry);
    closeables.add(stores);
    return RlsModule.create(settings, stores.shared(), stores.local(), registry, clock, ticker);
  }
}
