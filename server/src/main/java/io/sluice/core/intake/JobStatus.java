package io.sluice.core.intake;

import java.util.Locale;

/**
 * A job's status, as OpenAI's Responses background mode spells it ({@code queued}, {@code
 * in_progress}, {@code completed}, {@code failed}, {@code cancelled}), plus {@code expired}: it
 * waited past its freshness window and never ran.
 */
public enum JobStatus {
  QUEUED,
  IN_PROGRESS,
  COMPLETED,
  FAILED,
  CANCELLED,
  EXPIRED;

  /** {@code in_progress}: the wire and store spelling. */
  public String code() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Whether the job is done (its status no longer changes). */
  public boolean done() {
    return this != QUEUED && this != IN_PROGRESS;
  }

  /** The status spelled {@code code}, as {@link #code()} writes it. */
  public static JobStatus of(String code) {
    return valueOf(code.toUpperCase(Locale.ROOT));
  }
}
