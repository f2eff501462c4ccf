package io.sluice.rls.config;

/** How a limit counts. */
public enum Algorithm {
  /** envoyproxy/ratelimit's epoch-aligned fixed windows (default). */
  FIXED_WINDOW,
  /** Sluice extension: a token bucket of {@code requests_per_unit} refilled over the window. */
  TOKEN_BUCKET
}
