package io.sluice.core.intake;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code intake.dispatch} section: how a replica runs accepted jobs (docs/intake.md,
 * "Dispatch"). Off while {@code url} is empty.
 *
 * @param url the Envoy loopback listener's base URL the jobs are POSTed to (the stored request's
 *     path appended); empty: no dispatch (jobs wait until they expire)
 * @param markerKeyEnv the environment variable holding the marker's HMAC-SHA256 secret; its value
 *     is never logged nor shown by {@code /config}
 * @param headers the trusted request headers a dispatched job carries, header name to the job's
 *     field: {@code tenant}, {@code pool}, {@code class} or {@code route}
 * @param timeout how long one upstream call may take (the marker expires with it)
 * @param lease how long a claimed job is this replica's: longer than {@code timeout}, or a job
 *     still running is claimed again by another replica
 * @param maxInFlight jobs of one pool a replica runs at once at most
 */
public record DispatchPolicy(
    String url,
    String markerKeyEnv,
    Map<String, String> headers,
    Duration timeout,
    Duration lease,
    int maxInFlight) {
  /** The fields a dispatched job's trusted header may carry. */
  public static final java.util.Set<String> FIELDS =
      java.util.Set.of("tenant", "pool", "class", "route");

  public static final DispatchPolicy OFF =
      new DispatchPolicy(
          "",
          "SLUICE_DISPATCH_SECRET",
          Map.of("x-sluice-tenant", "tenant"),
          Duration.ofMinutes(10),
          Duration.ofMinutes(15),
          4);

  public DispatchPolicy {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(markerKeyEnv, "markerKeyEnv");
    headers = Map.copyOf(headers);
    Objects.requireNonNull(timeout, "timeout");
    Objects.requireNonNull(lease, "lease");
  }

  /** Whether accepted jobs are dispatched at all. */
  public boolean enabled() {
    return !url.isEmpty();
  }

  /** A copy with {@code url} (tests). */
  public DispatchPolicy withUrl(String v) {
    return new DispatchPolicy(v, markerKeyEnv, headers, timeout, lease, maxInFlight);
  }
}
