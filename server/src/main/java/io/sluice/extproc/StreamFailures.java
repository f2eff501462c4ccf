package io.sluice.extproc;

import io.grpc.Status;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.Subject;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.StreamTally;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How each way an ext_proc stream ends badly is accounted: the counter it increments ({@code
 * sluice_extproc_stream_errors_total{cause}}, {@code sluice_extproc_streams_undecided_total}), its
 * one WARN line (no stack trace; rate-limited by {@link StreamWarnings}), and the gRPC status the
 * stream ends with. The stream decides when; this class says what is counted, logged and sent.
 */
final class StreamFailures {
  private static final Logger LOG = LoggerFactory.getLogger(ExtProcStream.class);

  private StreamFailures() {}

  /** A frame that did not parse: INVALID_ARGUMENT. */
  static Status malformed(AdmissionMetrics m, Inbound req, StreamPhase phase) {
    m.streamError("malformed_frame");
    StreamWarnings.warn(
        "ext_proc stream ended INVALID_ARGUMENT: a {}-byte frame does not parse in phase {}: {}",
        req.frameSize(),
        name(phase),
        req.malformedCause());
    return Status.INVALID_ARGUMENT.withDescription(
        "ProcessingRequest does not parse: " + req.malformedCause());
  }

  /** An exception on any of the stream's paths: INTERNAL (counting never stops the failure). */
  static Status internal(AdmissionMetrics m, Throwable e, StreamPhase phase) {
    try {
      m.streamError("internal");
      StreamWarnings.warn("ext_proc stream failed in phase {}: {}", name(phase), String.valueOf(e));
      LOG.debug("ext_proc stream failure", e);
    } catch (RuntimeException again) {
      LOG.debug("counting a stream failure failed", again);
    }
    return Status.INTERNAL.withDescription("sluice internal error");
  }

  /** A message out of phase, an unknown message, an unsupported mode: FAILED_PRECONDITION. */
  static Status protocol(AdmissionMetrics m, String cause, String message) {
    m.streamError(cause);
    return Status.FAILED_PRECONDITION.withDescription(message);
  }

  /** The quota store's answer failed outright: INTERNAL. */
  static Status quotaStore(AdmissionMetrics m) {
    m.streamError("quota_store");
    return Status.INTERNAL.withDescription("quota store failed");
  }

  /** Silent past its phase's bound ({@link StreamPhase#idleBoundNanos}): DEADLINE_EXCEEDED. */
  static Status silent(
      AdmissionMetrics m, StreamPhase phase, boolean permit, long silentNanos, long boundNanos) {
    String[] cause = phase.idleCause(permit);
    m.streamError(cause[0]);
    StreamWarnings.warn(
        "ext_proc stream ended DEADLINE_EXCEEDED: silent for {} ms in phase {} ({})",
        silentNanos / 1_000_000L,
        name(phase),
        cause[1]);
    return Status.DEADLINE_EXCEEDED.withDescription(
        "no message within " + (boundNanos / 1_000_000L) + " ms (" + cause[1] + ")");
  }

  /** A stream that ended before its request was decided: counted by phase, one WARN. */
  static void undecided(
      AdmissionMetrics m, String where, StreamTally.Close how, @Nullable AdmissionSession session) {
    try {
      m.streamUndecided(where, how.tag());
      Subject s = session != null ? session.subject() : null;
      StreamWarnings.warn(
          "ext_proc stream ended before a decision: phase={} end={} pool={} class={}",
          where,
          how.tag(),
          s != null ? s.pool().name() : "none",
          s != null ? s.requestClass().name() : "none");
    } catch (RuntimeException e) {
      LOG.debug("counting an undecided stream failed", e); // never stops the close
    }
  }

  /** Cleaning up a failed stream failed part-way (the permit is then released directly). */
  static void cleanupFailed(RuntimeException e) {
    LOG.debug("releasing a failed stream", e);
  }

  private static String name(StreamPhase phase) {
    return phase.name().toLowerCase(Locale.ROOT);
  }
}
