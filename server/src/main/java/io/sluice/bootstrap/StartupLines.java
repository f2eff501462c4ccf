package io.sluice.bootstrap;

import io.sluice.config.SluiceConfig;
import io.sluice.rls.RlsModule;
import io.sluice.rls.config.RlsSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the start logs about the process: the policy in force, the rate limit service's config
 * state, how a permit's end is accounted, the pools' starting service times, and the warnings a
 * config earns. Text only; the same wording shows in {@code /readyz} where it applies.
 */
final class StartupLines {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  private StartupLines() {}

  /** The start-up line on how a permit's end is accounted (docs/envoy.md). */
  static final String RESPONSE_END_ACCOUNTING =
      "response end accounting: a permit is released at the response's end as the ext_proc stream"
          + " shows it (last body chunk, trailers, end of stream, the stream's close); exact with"
          + " the ext_proc filter's processing_mode.response_body_mode STREAMED (or BUFFERED) and"
          + " response_header_mode SEND, as the shipped Envoy configs set. With response_body_mode"
          + " NONE the end is not seen (Envoy 1.37+ closes the stream at the response headers):"
          + " the permit is then held for the pool's predicted service time (the median of the"
          + " ends seen, else the headers time plus the reserved output at the time per output"
          + " token learned on the pool's routes that stream, else defaultServiceTime: a guess),"
          + " see sluice_response_end_unseen_total and sluice_pool_service_time_source";

  /**
   * The start-up line on service times: every pool starts on a guess, its {@code
   * defaultServiceTime}, until it sees a response end.
   */
  static String serviceTimeStartLine(SluiceConfig config) {
    StringBuilder sb = new StringBuilder();
    for (var p : config.pools().values()) {
      sb.append(sb.length() == 0 ? "" : ", ")
          .append(p.name())
          .append(' ')
          .append(p.defaultServiceTime().toMillis())
          .append(" ms");
    }
    return "service times: every pool starts on a guess, its defaultServiceTime ("
        + sb
        + "), until it sees a response end; meanwhile deadline checks refuse nothing on it, and a"
        + " response whose end is not seen (response_body_mode NONE) is held for it. A pool"
        + " whose routes all have response_body_mode NONE never learns more than its response"
        + " headers: it stays on the guess (sluice_pool_service_time_source, /readyz)";
  }

  /**
   * One line naming what this process enforces: the policy (file or embedded, with its digest),
   * pools, classes, routes and the rate limit service's config state.
   */
  static String policySummary(
      SluiceConfig c, @Nullable Path configFile, String digest, String rlsState) {
    StringBuilder pools = new StringBuilder();
    for (var p : c.pools().values()) {
      pools.append(pools.length() == 0 ? "" : ", ").append(p.name()).append(" (");
      pools.append(p.capacityWorkUnits()).append(" work units");
      if (p.maxRequests() > 0) {
        pools.append(", ").append(p.maxRequests()).append(" requests");
      }
      pools.append(')');
    }
    return "policy "
        + (configFile == null ? "embedded default" : configFile.toString())
        + " (sha256 "
        + digest.substring(0, 12)
        + "): pools "
        + pools
        + "; classes "
        + String.join(", ", c.classes().keySet())
        + "; "
        + c.routes().size()
        + " routes; "
        + rlsState;
  }

  /** Whether the operator chose where the rate limit config lives (policy env or process env). */
  static boolean rlsConfigDirectoryConfigured(Map<String, String> rlsEnv) {
    return rlsEnv.containsKey("RUNTIME_ROOT")
        || rlsEnv.containsKey("RUNTIME_SUBDIRECTORY")
        || rlsEnv.containsKey("RUNTIME_APPDIRECTORY");
  }

  static boolean rlsConfigDirectoryMissing(@Nullable RlsModule rls) {
    return rls != null && !Files.isDirectory(rls.settings().configDirectory());
  }

  /**
   * The rate limit service's config state: off; on with its store kind and config directory and how
   * many domains are loaded; or a directory that does not exist, configured or not.
   */
  static String rlsState(ProcessServices s) {
    RlsModule rls = s.store.rls;
    if (rls == null) {
      return "rate limit service off (rateLimit.enabled: false)";
    }
    RlsSettings st = rls.settings();
    String store = "store " + s.store.stores.settings().backendType();
    if (rlsConfigDirectoryMissing(rls) && rls.health().domains() == 0) {
      return rlsConfigDirectoryConfigured(s.rlsEnv)
          ? "rate limit service on, "
              + store
              + ", config directory "
              + st.configDirectory()
              + " does not exist (RUNTIME_ROOT, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY):"
              + " no limits loaded"
          : "rate limit service on, "
              + store
              + ", no config directory (RUNTIME_ROOT not set; "
              + st.configDirectory()
              + " absent): no limits, every descriptor is answered OK";
    }
    return "rate limit service on, "
        + store
        + ", config directory "
        + st.configDirectory()
        + " ("
        + rls.health().domains()
        + " domains)";
  }

  /** One WARN when the operator pointed the rate limit service at a directory that is not there. */
  static void warnMissingRlsConfigDirectory(ProcessServices s) {
    RlsModule rls = s.store.rls;
    if (rls != null && rlsConfigDirectoryConfigured(s.rlsEnv) && rlsConfigDirectoryMissing(rls)) {
      LOG.warn(
          "rate limit config directory {} does not exist: no rate limits apply until it appears"
              + " (checked every SLUICE_RLS_CONFIG_POLL_INTERVAL); fix RUNTIME_ROOT,"
              + " RUNTIME_SUBDIRECTORY or RUNTIME_APPDIRECTORY",
          s.redactor.scrub(rls.settings().configDirectory().toString()));
    }
  }

  static void warnUntrustedHeaders(SluiceConfig config) {
    for (String w : io.sluice.config.TrustedHeaders.warnings(config)) {
      LOG.warn("config: {}", w);
    }
    for (String w : io.sluice.config.TenantSignals.warnings(config)) {
      LOG.warn("config: {}", w);
    }
    for (String w : io.sluice.config.ToolQueues.warnings(config)) {
      LOG.warn("config: {}", w);
    }
  }

  /** The start's last lines: the policy, the accounting rules, the ports it serves on. */
  static void logStarted(SluiceConfig config, String policySummary, int grpcPort, int adminPort) {
    LOG.info("{}", policySummary);
    LOG.info("{}", RESPONSE_END_ACCOUNTING);
    LOG.info("{}", serviceTimeStartLine(config));
    LOG.info(
        "sluice {} serving gRPC on {}:{}{} and admin HTTP on {}:{}",
        Main.versionLine().substring("sluice ".length()),
        config.server().grpcHost(),
        grpcPort,
        config.server().tls() == null ? "" : " (TLS)",
        config.server().adminHost(),
        adminPort);
  }
}
