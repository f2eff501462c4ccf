package io.sluice.rls;

import io.sluice.core.store.StoreHealth;

/**
 * Health of the rate limit service.
 *
 * @param healthy what {@code /healthcheck} and the gRPC health service report
 * @param configLoaded a config has been loaded at least once
 * @param domains domains in the active config
 * @param configLoadErrors failed (re)loads since start; the last good config stays active
 * @param lastConfigError text of the last failed load, empty when none
 * @param store the store's own view; a store failure makes the service unhealthy only when the
 *     default failure mode is {@code error} (else limits degrade by their failure mode)
 */
public record RlsHealth(
    boolean healthy,
    boolean configLoaded,
    int domains,
    long configLoadErrors,
    String lastConfigError,
    StoreHealth store) {}
