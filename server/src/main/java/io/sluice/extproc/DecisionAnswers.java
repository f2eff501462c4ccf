package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.Subject;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Builds the answer a decided request gets on the wire: the admit CONTINUE (with {@code
 * x-sluice-decision} / {@code x-sluice-estimate} as configured) or the refusal's ImmediateResponse
 * (HTTP or gRPC), each with the {@code sluice} dynamic metadata of the session.
 */
final class DecisionAnswers {
  private static final Map<String, String> DECISION_ADMIT_HEADER =
      Map.of("x-sluice-decision", "admit");

  private DecisionAnswers() {}

  static Answer admit(AdmissionRuntime rt, AdmissionSession s, boolean atBody) {
    SluiceConfig.Responses cfg = rt.config().responses();
    Map<String, String> headers;
    if (s.would() != null) {
      return shadowAdmit(rt, s, atBody);
    }
    if (!cfg.estimateHeader()) {
      headers = cfg.decisionHeader() ? DECISION_ADMIT_HEADER : Map.of();
    } else {
      TokenEstimate e = s.estimate();
      headers = new LinkedHashMap<>(4);
      if (cfg.decisionHeader()) {
        headers.put("x-sluice-decision", "admit");
      }
      headers.put(
          "x-sluice-estimate",
          "input="
              + e.inputTokens()
              + ";output="
              + e.outputReserveTokens()
              + ";work="
              + s.workUnits());
    }
    return Responses.admit(
        rt.tables().answerEntries(),
        atBody,
        headers,
        metadata(s, "admit", Reason.ADMITTED, null, null));
  }

  /**
   * Shadow mode: the admit of a request enforcement would have refused or queued. The decision
   * header (when configured) says {@code would_reject} or {@code would_queue}, {@code
   * x-sluice-reason} the would-be reason; the metadata adds {@code mode}, {@code would} and {@code
   * would_reason}.
   */
  private static Answer shadowAdmit(AdmissionRuntime rt, AdmissionSession s, boolean atBody) {
    SluiceConfig.Responses cfg = rt.config().responses();
    String would = s.would();
    String reason = s.wouldReason().code();
    Map<String, String> headers = new LinkedHashMap<>(4);
    if (cfg.decisionHeader()) {
      headers.put("x-sluice-decision", "would_" + would);
      headers.put("x-sluice-reason", reason);
    }
    TokenEstimate e = s.estimate();
    if (cfg.estimateHeader() && e != null) {
      headers.put(
          "x-sluice-estimate",
          "input="
              + e.inputTokens()
              + ";output="
              + e.outputReserveTokens()
              + ";work="
              + s.workUnits());
    }
    return Responses.admit(
        rt.tables().answerEntries(),
        atBody,
        headers,
        metadata(s, "admit", Reason.ADMITTED, would, reason));
  }

  /** A refusal; {@code grpc}: the request is a gRPC call (answered with grpc_status). */
  static Answer refusal(
      AdmissionRuntime rt,
      AdmissionSession s,
      boolean grpc,
      Reason reason,
      int status,
      long retryAfter,
      String message) {
    AnswerEncoder.DecisionFields f = metadata(s, "reject", reason, null, null);
    AnswerEncoder.Entries entries = rt.tables().answerEntries();
    return grpc
        ? Responses.rejectGrpc(entries, reason, status, retryAfter, message, f)
        : Responses.reject(entries, reason, status, retryAfter, message, f);
  }

  /**
   * The {@code sluice} metadata fields; {@code would} and {@code wouldReason}: shadow's (or null).
   */
  private static AnswerEncoder.DecisionFields metadata(
      AdmissionSession s,
      String decision,
      Reason reason,
      @Nullable String would,
      @Nullable String wouldReason) {
    Subject r = s.subject();
    TokenEstimate e = s.estimate();
    return new AnswerEncoder.DecisionFields(
        true,
        r.tenant().id(),
        r.tenant().tier().name(),
        r.requestClass().name(),
        r.pool().name(),
        r.route(),
        decision,
        reason.code(),
        e != null,
        e != null ? e.inputTokens() : 0,
        e != null ? e.outputReserveTokens() : 0,
        e != null ? s.workUnits() : 0,
        would,
        wouldReason);
  }
}
