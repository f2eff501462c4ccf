package io.sluice.bootstrap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.ExtProcService;
import io.sluice.extproc.QueueTimer;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.MetricNames;
import io.sluice.rls.RlsModule;
import io.sluice.rls.config.RlsSettings;
import java.io.IOException;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The warm-up before readiness on an isolated runtime: the configured pools and classes in a
 * controller of their own, a private in-memory store (never the shared Redis), a scratch metrics
 * registry and no decision log, driven through the real handlers by {@link WarmUp}. Only its call
 * counters and its duration go to the server's registry.
 */
final class IsolatedWarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  private IsolatedWarmUp() {}

  /**
   * Runs the warm-up {@code server.warmup} asks for, beside the live {@code services} (their timer,
   * their registry for its own counters), and returns the line {@code /readyz} shows.
   */
  static String run(SluiceConfig config, ProcessServices services) {
    return run(
        config,
        services.options.clock(),
        services.ticker,
        services.timer,
        services.store.rls == null ? null : services.rlsEnv,
        services.registry,
        services.redactor);
  }

  private static String run(
      SluiceConfig config,
      Clock clock,
      Ticker ticker,
      QueueTimer timer,
      @Nullable Map<String, String> rlsEnv,
      MeterRegistry registry,
      Secrets.Redactor redactor) {
    SluiceConfig.Warmup w = config.server().warmup();
    if (!w.enabled()) {
      return "off (server.warmup.enabled: false)";
    }
    RlsModule warmRls = null;
    IsolatedRuntime iso = null;
    String summary;
    try {
      iso = IsolatedRuntime.forWarmUp(config, ticker, clock, timer);
      Stores warmStores = iso.stores(); // never the shared Redis
      PrometheusMeterRegistry scratch = iso.registry();
      AdmissionController c = iso.controller();
      AdmissionMetrics m = iso.metrics();
      AdmissionRuntime isolated = iso.runtime();
      ExtProcService warmExtProc = ExtProcService.create(() -> isolated, () -> false);
      m.bindStreams(warmExtProc.tally());
      List<String> domains = List.of();
      if (rlsEnv != null) {
        Map<String, String> env = new HashMap<>(rlsEnv);
        env.put("SLUICE_RLS_CONFIG_POLL_INTERVAL", "0s");
        RlsSettings settings = RlsSettings.fromEnv(env);
        warmRls =
            RlsModule.create(
                settings, warmStores.shared(), warmStores.local(), scratch, clock, ticker);
        try {
          domains =
              List.copyOf(
                  io.sluice.rls.config.RateLimitConfigLoader.loadDirectory(
                          settings.configDirectory(),
                          settings.files().ignoreDotFiles(),
                          settings.files().mergeDomainConfig())
                      .domains());
        } catch (RuntimeException e) {
          domains = List.of();
        }
      }
      WarmUp.Result r =
          WarmUp.run(
              warmExtProc,
              warmRls == null ? null : warmRls.service(),
              domains,
              SyntheticStreams.forConfig(config),
              w.streams(),
              rlsEnv == null ? 0 : w.rlsCalls(),
              config.server().maxInboundMessageBytes(),
              w.timeout());
      count(registry, "extproc", r.streams(), r.streamsFailed());
      count(registry, "rls", r.rlsCalls(), r.rlsFailed());
      Gauge.builder(MetricNames.WARMUP_DURATION, r, x -> x.nanos() / 1e9)
          .description("how long the warm-up before readiness took")
          .baseUnit("seconds")
          .register(registry);
      // Every synthetic stream must have released what it took (it ran the real release path).
      int permitsLeft = 0;
      for (PoolState p : c.pools()) {
        permitsLeft += p.snapshot(ticker.nanos()).requestsInFlight();
      }
      int streamsLeft = warmExtProc.liveStreams();
      summary =
          String.format(
              java.util.Locale.ROOT,
              "done in %d ms (%d ext_proc streams, %d failed; %d rate limit calls, %d failed;"
                  + " left: %d permits, %d streams)",
              r.nanos() / 1_000_000,
              r.streams(),
              r.streamsFailed(),
              r.rlsCalls(),
              r.rlsFailed(),
              permitsLeft,
              streamsLeft);
      if (r.ok() && permitsLeft == 0 && streamsLeft == 0) {
        LOG.info("warm-up {}", summary);
      } else {
        LOG.warn("warm-up {}; first failure: {}", summary, redactor.scrubOrNull(r.firstError()));
      }
    } catch (IOException | RuntimeException e) {
      summary = "failed: " + redactor.scrub(e.toString());
      LOG.warn("warm-up {}", summary);
    } finally {
      if (warmRls != null) {
        warmRls.close();
      }
      if (iso != null) {
        iso.close();
      }
    }
    return summary;
  }

  /** {@code sluice_warmup_calls_total{kind, result}}. */
  private static void count(MeterRegistry registry, String kind, long calls, long failed) {
    Counter.builder(MetricNames.WARMUP_CALLS)
        .tag("kind", kind)
        .tag("result", "ok")
        .register(registry)
        .increment(calls - failed);
    Counter.builder(MetricNames.WARMUP_CALLS)
        .tag("kind", kind)
        .tag("result", "failed")
        .register(registry)
        .increment(failed);
  }
}
