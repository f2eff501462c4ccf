package io.sluice.core.estimate;

/** STUB. */
public record EstimateLimits(long defaultOutputTokens, long maxOutputTokens) {}
