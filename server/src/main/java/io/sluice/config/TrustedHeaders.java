package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import java.util.ArrayList;
import java.util.List;

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
          "x-sluice-work-units",
          // llm-d's trusted objective and fairness id: an auth layer sets them after the strip
          "x-llm-d-inference-objective",
          "x-llm-d-inference-fairness-id");

  private TrustedHeaders() {}

  /**
   * One warning per trusted header of a signal a client must not choose ({@link Signal#isGuarded}:
   * the built-in ones who pays, who is served first, how long a request is held, what it reserves,
   * and the registered signals declared so) that the shipped Envoy configs do not strip: such a
   * header is safe only if the operator's own Envoy removes client copies first.
   */
  public static List<String> warnings(SluiceConfig config) {
    List<String> out = new ArrayList<>();
    for (var e : config.signals().entrySet()) { // built-in, then registered
      Signal s = e.getKey();
      // only signals a client must not choose: the others are harmless from a client (deadlineMs
      // can only shorten the class deadline, operationId only labels the decision record)
      if (!s.isGuarded()) {
        continue;
      }
      List<Source> sources = e.getValue();
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
