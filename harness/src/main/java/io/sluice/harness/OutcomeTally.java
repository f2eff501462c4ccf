package io.sluice.harness;

import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * How a run's logical requests ended and the attempts sent for them: the counts behind {@link
 * RunReport.Outcomes} and the progress line. Not thread-safe: changed and read under its {@link
 * RunTally}'s lock.
 */
final class OutcomeTally {
  private long offered;
  private long attempts;
  private long completed;
  private long completedAfterRetry;
  private long deadlineMissed;
  private long deadlineMissedAfterFirstToken;
  private long cancelled;
  private long cancelledMidStream;
  private long retries;
  private long unsent;
  private long admittedLogical;
  private long refusedBeforeUpstream;
  private long unservedBeforeUpstream;
  private final Map<String, Long> rejectedFinal = new TreeMap<>();
  private final Map<String, Long> errors = new TreeMap<>();

  void arrived() {
    offered++;
  }

  void unsent() {
    unsent++;
  }

  void attemptSent(boolean retry) {
    attempts++;
    if (retry) {
      retries++;
    }
  }

  /** A logical request reached the upstream for the first time. */
  void reachedUpstream() {
    admittedLogical++;
  }

  /** {@code l} ended as {@code ending}; {@code reachedUpstream}: whether it ever got there. */
  void finished(Logical l, Ending ending, @Nullable String detail, boolean reachedUpstream) {
    if (!reachedUpstream) {
      if (ending == Ending.REFUSED) {
        refusedBeforeUpstream++;
      } else {
        unservedBeforeUpstream++;
      }
    }
    switch (ending) {
      case COMPLETED -> {
        completed++;
        if (l.attempt > 0) {
          completedAfterRetry++;
        }
      }
      case DEADLINE -> {
        deadlineMissed++;
        if (detail != null) {
          deadlineMissedAfterFirstToken++;
        }
      }
      case CANCELLED -> {
        cancelled++;
        if (detail != null) {
          cancelledMidStream++;
        }
      }
      case REFUSED -> rejectedFinal.merge(detail, 1L, Long::sum);
      case ERROR -> errors.merge(detail, 1L, Long::sum);
    }
  }

  /** The logical counts so far, for second {@code second}'s progress line. */
  LoadGenerator.Progress progress(int second, long refusedAttempts, int active) {
    return new LoadGenerator.Progress(
        second,
        offered,
        admittedLogical,
        refusedBeforeUpstream,
        unservedBeforeUpstream,
        offered - admittedLogical - refusedBeforeUpstream - unservedBeforeUpstream,
        completed,
        refusedAttempts,
        active);
  }

  RunReport.Outcomes report(long unfinished) {
    return new RunReport.Outcomes(
        offered,
        attempts,
        completed,
        completedAfterRetry,
        deadlineMissed,
        deadlineMissedAfterFirstToken,
        cancelled,
        cancelledMidStream,
        Map.copyOf(rejectedFinal),
        retries,
        unsent,
        Map.copyOf(errors),
        unfinished);
  }
}
