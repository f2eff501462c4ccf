package io.sluice.core.intake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * What a dispatched job sends upstream and what its answer makes of it: the stored body with {@code
 * background} rewritten to false (the upstream answers the call itself), and the upstream's answer
 * turned into the job's end ({@link Outcome}): a 2xx Responses object is kept as the result with
 * its {@code id} replaced by the job's; a non-2xx ends the job {@code failed} with the upstream's
 * status and reason; an answer over {@code intake.maxResultBytes} ends it {@code failed} ({@code
 * result_too_large}), never truncated; a refusal by Sluice's own pool for room (429 or 503 with an
 * {@code x-sluice-reason}) leaves the job claimed: its lease lapses and it is claimed again.
 */
public final class JobResults {
  // a stored request body and the upstream's answer: both bounded in depth
  private static final ObjectMapper JSON =
      new ObjectMapper(
          com.fasterxml.jackson.core.JsonFactory.builder()
              .streamReadConstraints(
                  io.sluice.core.estimate.JsonBounds.depth(
                      io.sluice.core.estimate.JsonBounds.REQUEST_MAX_DEPTH))
              .build());

  private JobResults() {}

  /**
   * How a job ends: {@code status} null means it does not end now (its lease lapses and it is
   * claimed again).
   */
  @SuppressWarnings("ArrayRecordComponent") // handed to the store as it is
  public record Outcome(
      @Nullable JobStatus status, byte @Nullable [] result, @Nullable String error) {
    static Outcome failed(String code, String message) {
      return new Outcome(JobStatus.FAILED, null, code + ": " + message);
    }

    /** The event counted for it: {@code completed}, {@code failed} or {@code returned}. */
    public String event() {
      return status == null ? "returned" : status.code();
    }
  }

  /** The body the upstream gets: {@code body} with {@code background: false}. */
  public static byte[] forUpstream(byte[] body) {
    try {
      JsonNode n = JSON.readTree(body);
      if (!(n instanceof ObjectNode o)) {
        throw new IllegalArgumentException("a stored job's body is not a JSON object");
      }
      o.put("background", false);
      return JSON.writeValueAsBytes(o);
    } catch (IOException e) {
      throw new IllegalArgumentException("a stored job's body is not JSON", e);
    }
  }

  /**
   * The end of job {@code id} from the upstream's answer.
   *
   * @param body the answer's body, or null when it was larger than the bound
   * @param sluiceReason the answer's {@code x-sluice-reason} (Sluice answered it), or null
   */
  public static Outcome of(
      String id, int status, byte @Nullable [] body, @Nullable String sluiceReason, int maxBytes) {
    if (sluiceReason != null && (status == 429 || status == 503)) {
      return new Outcome(null, null, null); // no room after all: claimed again when there is
    }
    if (status < 200 || status > 299) {
      String reason = sluiceReason != null ? sluiceReason : errorCode(body);
      return Outcome.failed(
          "upstream_error",
          "the upstream answered " + status + (reason == null ? "" : " (" + reason + ")"));
    }
    if (body == null) {
      return Outcome.failed(
          "result_too_large",
          "the upstream's answer is larger than intake.maxResultBytes (" + maxBytes + " bytes)");
    }
    try {
      JsonNode n = JSON.readTree(body);
      if (!(n instanceof ObjectNode o)) {
        return Outcome.failed("upstream_invalid", "the upstream's answer is not a JSON object");
      }
      o.put("id", id);
      byte[] out = JSON.writeValueAsBytes(o);
      if (out.length > maxBytes) {
        return Outcome.failed(
            "result_too_large",
            "the upstream's answer is larger than intake.maxResultBytes (" + maxBytes + " bytes)");
      }
      return new Outcome(JobStatus.COMPLETED, out, null);
    } catch (IOException e) {
      return Outcome.failed("upstream_invalid", "the upstream's answer is not JSON");
    }
  }

  /** {@code error.code} (or {@code error.type}) of an OpenAI-style error body, or null. */
  private static @Nullable String errorCode(byte @Nullable [] body) {
    if (body == null || body.length == 0) {
      return null;
    }
    try {
      JsonNode e = JSON.readTree(body).path("error");
      String code = e.path("code").asText("");
      if (code.isEmpty()) {
        code = e.path("type").asText("");
      }
      return code.isEmpty() || code.length() > 64 ? null : code;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
