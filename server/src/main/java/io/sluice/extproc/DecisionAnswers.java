package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.RunningRequest;
import io.sluice.core.session.Subject;
import io.sluice.core.session.UpstreamPlan;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Builds the answer a decided request gets on the wire: the admit CONTINUE (with {@code
 * x-sluice-decision} / {@code x-sluice-estimate} as configured) or the refusal's ImmediateResponse
 * (HTTP or gRPC), each with the {@code sluice} dynamic metadata of the session.
 */
final class DecisionAnswers {
  private DecisionAnswers() {}

  /** The admit; its epoch deadline on the wall clock of {@code serial}'s step (one read). */
  static Answer admit(
      AdmissionRuntime rt, AdmissionSession s, boolean atBody, SerialExecutor serial) {
    SluiceConfig.Responses cfg = rt.config().responses();
    if (s.running().would() != null) {
      return shadowAdmit(rt, s, atBody);
    }
    long left = deadlineMillis(s, s.running().answerNanos(atBody)); // the decision's instant
    UpstreamPlan plan = s.running().plan();
    boolean degraded = plan.rung() != null;
    if (plan.headers().isEmpty() && (!atBody || plan.body() == null)) {
      // the common admit: one pass into one array, its constant parts encoded once (AdmitAnswer)
      double epochMillis = serial.stepMillisOr(rt.clock()) + (double) left;
      TokenEstimate e = s.estimate();
      Subject r = s.subject();
      byte[] route =
          rt.tables()
              .answerEntries()
              .route(r.tenant().tier().name(), r.requestClass().name(), r.pool().name(), r.route());
      return Answer.encoded(
          AdmitAnswer.encode(
              AdmitHeaders.of(cfg),
              atBody,
              plan.clearRouteCache(),
              route,
              r.tenant().id(),
              degraded,
              e != null,
              e != null ? e.inputTokens() : 0,
              e != null ? e.outputReserveTokens() : 0,
              e != null ? s.workUnits() : 0,
              left,
              epochMillis,
              admitMore(s)));
    }
    Map<String, String> headers = headers(cfg, plan, s, left, atBody);
    return Responses.admit(
        rt.tables().answerEntries(),
        atBody,
        HeaderKeys.keys(headers),
        HeaderKeys.values(headers),
        atBody ? plan.body() : null,
        plan.clearRouteCache(),
        metadata(
            s,
            degraded ? "degrade" : "admit",
            degraded ? Reason.DEGRADED : Reason.ADMITTED,
            null,
            null,
            admitExtra(serial.stepMillisOr(rt.clock()), s, left)));
  }

  /** The admit's header mutation as a map, in the order it is written (any plan, any config). */
  private static Map<String, String> headers(
      SluiceConfig.Responses cfg,
      UpstreamPlan plan,
      AdmissionSession s,
      long left,
      boolean atBody) {
    Map<String, String> headers = new LinkedHashMap<>(plan.headers().size() + 6);
    if (cfg.decisionHeader()) {
      headers.put("x-sluice-decision", plan.rung() != null ? "degrade" : "admit");
    }
    putEstimate(headers, cfg, s);
    if (!cfg.deadlineHeader().isEmpty()) {
      headers.put(cfg.deadlineHeader(), Long.toString(left));
    }
    if (cfg.upstreamTimeout()) {
      // Envoy's router reads (and removes) it when it forwards the request: the route's timeout
      // becomes what is left of the caller's deadline (needs mutation_rules.allow_envoy)
      headers.put("x-envoy-upstream-rq-timeout-ms", Long.toString(left));
    }
    headers.putAll(plan.headers());
    byte[] body = atBody ? plan.body() : null;
    if (body != null) { // BUFFERED keeps content-length: it must match the new body
      headers.put("content-length", Integer.toString(body.length));
    }
    return headers;
  }

  /**
   * Milliseconds left before the request's deadline at {@code nowNanos} (at least 1: it was
   * admitted in time).
   */
  private static long deadlineMillis(AdmissionSession s, long nowNanos) {
    long nanos = s.subject().deadlineNanos() - nowNanos;
    return Math.max(1, (nanos + 999_999L) / 1_000_000L);
  }

  /**
   * The admit's metadata beyond the common fields: the time left and the deadline (epoch ms: the
   * clock when answered plus the time left), then {@link #admitMore}.
   */
  private static byte[] admitExtra(long nowMillis, AdmissionSession s, long left) {
    byte[] deadline =
        AnswerEncoder.numberEntries(
            "deadline_remaining_ms", left, "deadline_epoch_ms", nowMillis + (double) left);
    byte[] more = admitMore(s);
    if (more.length == 0) {
      return deadline;
    }
    byte[] out = java.util.Arrays.copyOf(deadline, deadline.length + more.length);
    System.arraycopy(more, 0, out, deadline.length, more.length);
    return out;
  }

  private static final byte[] NONE = new byte[0];

  /**
   * The admit's metadata after the deadline's, encoded (empty for the common admit): the queue
   * wait, the rung and trigger of a degraded request and the pool a reroute sent it to, the engine
   * priority written.
   */
  private static byte[] admitMore(AdmissionSession s) {
    UpstreamPlan plan = s.running().plan();
    long waited = s.running().queueWaitNanos();
    if (waited <= 0 && plan.rung() == null && plan.enginePriority() == null) {
      return NONE; // the common admit
    }
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(96);
    if (waited > 0) {
      out.writeBytes(
          AnswerEncoder.numberEntry(
              "queue_wait_ms", Math.max(1, Math.floorDiv(waited, 1_000_000L))));
    }
    String rung = plan.rung();
    if (rung != null) {
      out.writeBytes(AnswerEncoder.stringEntry("degraded", rung));
      out.writeBytes(AnswerEncoder.stringEntry("degrade_trigger", String.valueOf(plan.trigger())));
      if (!plan.pool().name().equals(s.subject().pool().name())) {
        out.writeBytes(AnswerEncoder.stringEntry("rerouted_to", plan.pool().name()));
      }
    }
    String priority = plan.enginePriority();
    if (priority != null) {
      out.writeBytes(AnswerEncoder.stringEntry("engine_priority", priority));
    }
    return out.toByteArray();
  }

  /**
   * The headers the client's response gets, or an empty map: {@code x-sluice-degraded: <rung>} for
   * a degraded request (always: a client must know its answer was made cheaper), {@code
   * x-sluice-queue-wait-ms} for one that waited in the queue, and what its checks' holds disclose
   * (a budget past a soft threshold: {@code x-sluice-budget-remaining}, ...).
   */
  static Map<String, String> responseHeaders(RunningRequest s) {
    String rung = s.plan().rung();
    long waited = s.queueWaitNanos();
    Map<String, String> disclosed = s.disclosed();
    if (rung == null && waited <= 0) {
      return disclosed == null ? Map.of() : disclosed;
    }
    Map<String, String> h = new LinkedHashMap<>(4);
    if (disclosed != null) {
      h.putAll(disclosed);
    }
    if (rung != null) {
      h.put("x-sluice-degraded", rung);
    }
    if (waited > 0) {
      h.put("x-sluice-queue-wait-ms", Long.toString(Math.max(1, waited / 1_000_000L)));
    }
    return h;
  }

  /**
   * Shadow mode: the admit of a request enforcement would have refused or queued. The decision
   * header (when configured) says {@code would_reject} or {@code would_queue}, {@code
   * x-sluice-reason} the would-be reason; the metadata adds {@code mode}, {@code would} and {@code
   * would_reason}.
   */
  private static Answer shadowAdmit(AdmissionRuntime rt, AdmissionSession s, boolean atBody) {
    SluiceConfig.Responses cfg = rt.config().responses();
    String would = s.running().would();
    String reason = s.running().wouldReason().code();
    Map<String, String> headers = new LinkedHashMap<>(4);
    if (cfg.decisionHeader()) {
      headers.put("x-sluice-decision", "would_" + would);
      headers.put("x-sluice-reason", reason);
    }
    putEstimate(headers, cfg, s);
    return Responses.admit(
        rt.tables().answerEntries(),
        atBody,
        headers,
        metadata(s, "admit", Reason.ADMITTED, would, reason));
  }

  /** The {@code x-sluice-estimate} header, when configured and the request has an estimate. */
  private static void putEstimate(
      Map<String, String> headers, SluiceConfig.Responses cfg, AdmissionSession s) {
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
    long wait = s.running().refusalWaitNanos();
    long waitMillis = wait < 0 ? -1 : (wait + 999_999L) / 1_000_000L;
    AnswerEncoder.DecisionFields f =
        metadata(
            s,
            "reject",
            reason,
            null,
            null,
            waitMillis < 0
                ? new byte[0]
                : AnswerEncoder.numberEntry("predicted_wait_ms", waitMillis));
    AnswerEncoder.Entries entries = rt.tables().answerEntries();
    byte[] dropped = rt.tables().held(rt).droppedReason() ? LlmdDroppedReason.bytes(reason) : null;
    return Responses.reject(
        entries,
        reason,
        status,
        retryAfter,
        waitMillis,
        message,
        f,
        grpc,
        dropped,
        s.running().refusalDetail());
  }

  /**
   * A check's own answer ({@link AdmissionCheck.Answered}: a job accepted for later, an operation's
   * status): its status, {@code content-type: application/json}, {@code x-sluice-reason} and the
   * check's headers and body, with the {@code sluice} metadata (decision {@code answer}).
   */
  static Answer answered(AdmissionRuntime rt, AdmissionSession s, AdmissionCheck.Answered a) {
    int n = 2 + a.headers().size();
    byte[][] keys = new byte[n][];
    byte[][] values = new byte[n][];
    keys[0] = "content-type".getBytes(StandardCharsets.US_ASCII);
    values[0] = "application/json".getBytes(StandardCharsets.US_ASCII);
    keys[1] = "x-sluice-reason".getBytes(StandardCharsets.US_ASCII);
    values[1] = a.reason().code().getBytes(StandardCharsets.UTF_8);
    int i = 2;
    for (Map.Entry<String, String> h : a.headers().entrySet()) {
      keys[i] = h.getKey().getBytes(StandardCharsets.UTF_8);
      values[i++] = h.getValue().getBytes(StandardCharsets.UTF_8);
    }
    return Answer.encoded(
        AnswerEncoder.reject(
            rt.tables().answerEntries(),
            a.status(),
            ("sluice_" + a.reason().code()).getBytes(StandardCharsets.UTF_8),
            a.body(),
            keys,
            values,
            metadata(s, "answer", a.reason(), null, null)));
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
    return metadata(s, decision, reason, would, wouldReason, new byte[0]);
  }

  private static AnswerEncoder.DecisionFields metadata(
      AdmissionSession s,
      String decision,
      Reason reason,
      @Nullable String would,
      @Nullable String wouldReason,
      byte[] extra) {
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
        wouldReason,
        extra);
  }
}
