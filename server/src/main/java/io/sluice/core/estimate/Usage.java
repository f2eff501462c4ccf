package io.sluice.core.estimate;

/** STUB. */
public record Usage(long inputTokens, long outputTokens, boolean reported) {
  public static final Usage NONE = new Usage(0, 0, false);
}
