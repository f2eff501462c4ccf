package io.sluice.core.adapt;

/**
 * What an outage holding an {@link AdaptiveLimit} at its floor gives back by itself: the limit it
 * interrupted ({@code fraction} of the ceiling), restored at the latest when the last outage
 * answer's Retry-After passes, {@code inNanos} from now (0: due at the next tick).
 */
public record Restore(double fraction, long inNanos) {}
