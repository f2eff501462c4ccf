package io.sluice.bench;

/** The policies the floor's Sluice targets run: admitting everything, refusing everything. */
final class FloorPolicies {
  private FloorPolicies() {}

  private static final String ANSWER_DECORATIONS =
      "responses: {decisionHeader: false, estimateHeader: false}";

  /**
   * Target {@code sluice-unguarded}: {@code policy} without the HTTP/2 abuse limits (the
   * premature-reset guard in front of grpc's codec, grpc's RST_STREAM limit), to measure what they
   * cost on the transport.
   */
  static String withoutHttp2Guards(String policy) {
    String out =
        policy.replace(
            "grpc: {host: 127.0.0.1, port: 0}",
            "grpc: {host: 127.0.0.1, port: 0, maxPrematureResets: 0, maxResetsPerWindow: 0}");
    if (out.equals(policy)) {
      throw new IllegalStateException("bench policy changed shape; update FloorPolicies");
    }
    return out;
  }

  /** {@code policy} with no deadline header on the admitted request. */
  static String withoutDeadlineHeader(String policy) {
    String out =
        policy.replace(
            ANSWER_DECORATIONS,
            "responses: {decisionHeader: false, estimateHeader: false, deadlineHeader: \"\"}");
    if (out.equals(policy)) {
      throw new IllegalStateException("bench policy changed shape; update FloorPolicies");
    }
    return out;
  }

  /** One pool, one class {@code interactive} of {@code share} with or without borrowing. */
  private static String interactive(String share, boolean borrow) {
    return Policies.policy(
        1_000_000_000_000L,
        0,
        0,
        """
          interactive: {rank: 0, reservedShare: %s, borrow: %s, deadline: 8s,
                        defaultOutputTokens: 256}
        """
            .formatted(share, borrow),
        "interactive");
  }

  static final String ADMIT_WITH_DEADLINE_HEADER = interactive("1.0", true);

  /**
   * The floor's admit: no header mutation (decision, estimate and deadline headers off), so the
   * answer is the transport's and the admission path's, not the answer's optional decorations.
   */
  static final String ADMIT = withoutDeadlineHeader(ADMIT_WITH_DEADLINE_HEADER);

  static final String REJECT = interactive("0.0", false);
}
