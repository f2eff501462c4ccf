package io.sluice.rls;

import io.sluice.rls.config.LimitSpec;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The outcome of a ShouldRateLimit call: a decision, or a failure mapped to gRPC UNKNOWN. */
public sealed interface RlsDecision {
  enum Code {
    OK,
    OVER_LIMIT
  }

  /** {@code limit_remaining} for unlimited descriptors (2^32 − 1). */
  long UNLIMITED_REMAINING = 0xFFFF_FFFFL;

  /**
   * One descriptor's status.
   *
   * @param currentLimit null when no limit applies
   * @param resetSeconds {@code duration_until_reset} in seconds; -1 when unset
   */
  record Status(
      Code code, @Nullable LimitSpec currentLimit, long limitRemaining, long resetSeconds) {
    static final Status NO_LIMIT = new Status(Code.OK, null, 0, -1);
    static final Status UNLIMITED = new Status(Code.OK, null, UNLIMITED_REMAINING, -1);
  }

  record Header(String name, String value) {}

  record Decided(Code overall, List<Status> statuses, List<Header> headers)
      implements RlsDecision {}

  /** The call fails (reference: a plain error, gRPC status UNKNOWN). */
  record Failed(String message) implements RlsDecision {}

  /**
   * The request is outside what the service accepts (gRPC INVALID_ARGUMENT, HTTP 400).
   *
   * @param reason stable reason code, the {@code reason} tag of {@code sluice.rls.invalid_requests}
   */
  record Invalid(String reason, String message) implements RlsDecision {}
}
