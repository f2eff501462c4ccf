package io.sluice.core.estimate;

/** STUB. */
public final class TokenEstimator {
  public TokenEstimator(EstimatorSettings settings) {}

  public TokenEstimate estimate(
      RequestFormat format, byte[] body, int offset, int length, EstimateLimits limits) {
    return new TokenEstimate(
        Math.max(1, length / 4), limits.defaultOutputTokens(), "bytes", null, null, false, false);
  }

  public TokenEstimate fromContentLength(long contentLengthBytes, EstimateLimits limits) {
    return new TokenEstimate(
        Math.max(1, contentLengthBytes / 4),
        limits.defaultOutputTokens(),
        "content-length",
        null,
        null,
        false,
        false);
  }
}
