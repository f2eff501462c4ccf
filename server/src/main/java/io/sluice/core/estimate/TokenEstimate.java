package io.sluice.core.estimate;

/** STUB. */
public record TokenEstimate(
    long inputTokens,
    long outputReserveTokens,
    String method,
    String fallbackCause,
    String model,
    boolean stream,
    boolean outputClamped) {}
