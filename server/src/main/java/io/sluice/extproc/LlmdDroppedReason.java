package io.sluice.extproc;

import io.sluice.core.admission.Reason;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * A refusal's value of llm-d's {@code x-llm-d-request-dropped-reason} (written beside {@code
 * x-sluice-reason} when {@code llmD.droppedReasonHeader} is on), in llm-d's taxonomy of
 * flow-control drops (llm-d-inference-scheduler / gateway-api-inference-extension {@code
 * pkg/common/error/error.go}): {@code rejected-*} never reached an inference server, {@code
 * evicted-*} was killed after dispatch. Sluice refuses before dispatch only, so it writes the
 * {@code rejected-*} values; a refusal that is not a flow-control drop (a tenant's own limits, bad
 * input, a spent budget, no route) gets no header, as llm-d sends none for its own such errors.
 */
final class LlmdDroppedReason {
  static final byte[] HEADER =
      io.sluice.config.LlmdInterop.DROPPED_REASON_HEADER.getBytes(StandardCharsets.US_ASCII);

  static final String SATURATED = "rejected-saturated";
  static final String TTL_EXPIRED = "rejected-ttl-expired";
  static final String SHUTTING_DOWN = "rejected-shutting-down";

  private static final byte[] SATURATED_BYTES = SATURATED.getBytes(StandardCharsets.US_ASCII);
  private static final byte[] TTL_EXPIRED_BYTES = TTL_EXPIRED.getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SHUTTING_DOWN_BYTES =
      SHUTTING_DOWN.getBytes(StandardCharsets.US_ASCII);

  private LlmdDroppedReason() {}

  /** The header's value for a refusal with {@code reason}, or null: no header. */
  static @Nullable String of(Reason reason) {
    return switch (reason) {
      case POOL_SATURATED, QUEUE_FULL, CLASS_SHARE, UPSTREAM_OVERLOADED, INTAKE_UNAVAILABLE ->
          SATURATED;
      case QUEUE_TIMEOUT, DEADLINE_UNREACHABLE -> TTL_EXPIRED;
      case SHUTTING_DOWN -> SHUTTING_DOWN;
      default -> null;
    };
  }

  /** As {@link #of}, the value's bytes (shared constants: never written to). */
  static byte @Nullable [] bytes(Reason reason) {
    String v = of(reason);
    if (v == null) {
      return null;
    }
    return switch (v) {
      case SATURATED -> SATURATED_BYTES;
      case TTL_EXPIRED -> TTL_EXPIRED_BYTES;
      default -> SHUTTING_DOWN_BYTES;
    };
  }
}
