package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.Signals;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The decision record's correlation fields (docs/telemetry.md, "Joining Envoy's access log"):
 * Envoy's {@code x-request-id} ({@code request_id}) and the trace id of the trace context Envoy
 * forwarded ({@code trace_id}), read from the request's signals ({@code requestId}, {@code
 * traceparent}, B3's {@code b3} or {@code b3TraceId}). Malformed trace headers leave {@code
 * trace_id} empty; the request id is cut at {@value #MAX_ID_CHARS} characters.
 */
public final class Correlation implements DecisionRecordPart {
  static final int MAX_ID_CHARS = 128;

  private final String requestId;
  private final String traceparent;
  private final @Nullable String b3;
  private final @Nullable String b3TraceId;

  /**
   * @param requestId the request id's signal key
   * @param traceparent the W3C traceparent's signal key
   * @param b3 B3's single header's signal key, or null when B3 is not read
   * @param b3TraceId B3's trace id header's signal key, or null when B3 is not read
   */
  public Correlation(
      String requestId, String traceparent, @Nullable String b3, @Nullable String b3TraceId) {
    this.requestId = requestId;
    this.traceparent = traceparent;
    this.b3 = b3;
    this.b3TraceId = b3TraceId;
  }

  @Override
  public void write(RequestFacts facts, AdmissionRecord.Builder record) {
    Signals s = facts.subject().signals();
    String id = s.get(requestId);
    if (id != null && !id.isEmpty()) {
      record.setRequestId(id.length() <= MAX_ID_CHARS ? id : id.substring(0, MAX_ID_CHARS));
    }
    String trace = traceId(s);
    if (trace != null) {
      record.setTraceId(trace);
    }
  }

  /** The trace id the request's trace context carries, 32 lower-case hex digits, or null. */
  @Nullable String traceId(Signals s) {
    String tp = s.get(traceparent);
    if (tp != null) {
      // version "-" trace id (32 hex) "-" parent id (16 hex) "-" flags
      String[] parts = tp.trim().split("-", -1);
      if (parts.length >= 4 && parts[0].length() == 2 && hex(parts[1], 32)) {
        return parts[1].toLowerCase(Locale.ROOT);
      }
    }
    String single = b3 == null ? null : s.get(b3);
    if (single != null) {
      int dash = single.indexOf('-');
      String t = trace16or32(dash < 0 ? single.trim() : single.substring(0, dash).trim());
      if (t != null) {
        return t;
      }
    }
    String multi = b3TraceId == null ? null : s.get(b3TraceId);
    return multi == null ? null : trace16or32(multi.trim());
  }

  /** A B3 trace id (16 or 32 hex), as 32 digits (a 64-bit one left-padded with zeros). */
  private static @Nullable String trace16or32(String v) {
    if (hex(v, 32)) {
      return v.toLowerCase(Locale.ROOT);
    }
    return hex(v, 16) ? "0000000000000000" + v.toLowerCase(Locale.ROOT) : null;
  }

  private static boolean hex(String v, int len) {
    if (v.length() != len) {
      return false;
    }
    boolean nonZero = false;
    for (int i = 0; i < len; i++) {
      char c = v.charAt(i);
      boolean digit = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!digit) {
        return false;
      }
      nonZero |= c != '0';
    }
    return nonZero;
  }
}
