package io.sluice.core.adapt;

import java.util.Locale;

/**
 * Who produced a response Sluice sees on the response path: only {@link #UPSTREAM}'s answers move
 * an adaptive limit; the others are counted apart ({@code sluice_pool_adaptive_answers_total}) and
 * otherwise ignored. The transport tells them apart (docs/envoy.md, "Local replies on the response
 * path").
 */
public enum AnswerSource {
  /** The upstream (the model server) answered. */
  UPSTREAM,
  /** Envoy's rate-limit filter refused the request ({@code x-envoy-ratelimited}). */
  ENVOY_RATELIMIT,
  /** Envoy's overload manager or a circuit breaker refused it ({@code x-envoy-overloaded}). */
  ENVOY_OVERLOAD,
  /**
   * Another Envoy local reply: its 503 for a reset, a refused connection or no healthy host, its
   * 504 of a timer (no upstream answer: no {@code x-envoy-upstream-service-time}, or a response
   * code detail other than {@code via_upstream}).
   */
  ENVOY_LOCAL,
  /** Sluice's own refusal (another replica's, or a refusal relayed by another filter). */
  SLUICE;

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
