package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Which request headers a policy may trust. A client sends any header it likes; a header is
 * trustworthy only when the Envoy in front removes client copies before ext_proc runs and sets it
 * from something it verified. This class holds the one list of headers every Envoy config shipped
 * in {@code envoy-config/} strips from clients ({@code envoy.yaml} and {@code
 * envoy-headers-only.yaml}: filter {@code sluice.sanitize}; Istio: the same filter in the
 * EnvoyFilters; Envoy Gateway: {@code ClientTrafficPolicy} {@code earlyRequestHeaders}); {@code
 * EnvoyConfigTest} and {@code MeshManifestsTest} fail when a shipped config strips a different set.
 */
public final class TrustedHeaders {
  /** Request headers removed from client requests by every shipped Envoy config (lower case). */
  public static final List<String> STRIPPED_BY_SHIPPED_ENVOY_CONFIGS =
      List.of(
          "x-tenant-id",
          "x-sluice-tenant",
          "x-sluice-pool",
          "x-sluice-class",
          "x-sluice-route",
          "x-sluice-format",
          "x-sluice-max-message-timeout-ms",
          "x-sluice-decision",
          "x-sluice-reason",
          "x-sluice-est-input-tokens",
          "x-sluice-est-output-tokens",
          "x-sluice-work-units");

  /**
   * Signals a client must not choose: who pays (tenant), who is served first (class, pool, route,
   * format), how long a request may be held, how much fan-out work it reserves of the pool (fanout:
   * a client could reserve the pool away from others) and whose workflow budget it counts against
   * (workflow: a client could escape its budget or use up another's). The others are harmless from
   * a client: {@code deadlineMs} can only shorten the class deadline and {@code operationId} only
   * labels the decision record.
   */
  static final Set<Signal> TRUST_SIGNALS =
      Set.of(
          Signal.TENANT,
          Signal.CLASS,
          Signal.POOL,
          Signal.ROUTE,
          Signal.FORMAT,
          Signal.MAX_MESSAGE_TIMEOUT_MS,
          Signal.FANOUT,
          Signal.WORKFLOW);

  private TrustedHeaders() {}

  /**
   * One warning per trusted header that the shipped Envoy configs do not strip: such a header is
   * safe only if the operator's own Envoy removes client copies first.
   */
  public static List<String> warnings(SluiceConfig config) {
    List<String> out = new ArrayList<>();
    for (Signal s : Signal.values()) {
      if (!TRUST_SIGNALS.contains(s)) {
        continue;
      }
      List<Source> sources = config.signals().getOrDefault(s, List.of());
      for (int i = 0; i < sources.size(); i++) {
        if (sources.get(i) instanceof Source.Header h
            && !STRIPPED_BY_SHIPPED_ENVOY_CONFIGS.contains(h.header())) {
          out.add(
              "signals."
                  + s.key()
                  + "["
                  + i
                  + "]: header "
                  + h.header()
                  + " is trusted but not stripped by the shipped Envoy configs (envoy-config/);"
                  + " a client can set it unless your Envoy removes client copies before ext_proc"
                  + " (see docs/envoy.md, Trusted tenant)");
        }
      }
    }
    return out;
  }
}
