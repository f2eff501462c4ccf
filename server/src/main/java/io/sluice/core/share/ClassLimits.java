package io.sluice.core.share;

/**
 * One class's part of the pool as the share allocation divides it: its guaranteed work and request
 * slots, and the most of each it can hold in the pool (the pool's own numbers).
 */
public record ClassLimits(
    String name, long guaranteedWork, long reachWork, int guaranteedRequests, int reachRequests) {}
