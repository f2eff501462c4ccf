package io.sluice.core.admission;

/** How a permit ended; reported exactly once per permit. */
public enum Outcome {
  /** The response ended normally (last body chunk, trailers, or headers-only). */
  COMPLETED,
  /** The stream was cancelled (client gone, Envoy reset) before the response ended. */
  CANCELLED,
  /** An internal or protocol error ended the stream. */
  ERROR,
  /** The server shut down while the request was in flight. */
  SHUTDOWN
}
