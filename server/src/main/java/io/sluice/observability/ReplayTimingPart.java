package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.ReplayTiming;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.time.Ticker;

/**
 * The decision record's {@code timing} (docs/replay.md, "Records"): the request's arrival,
 * decision, admission and end on the process's monotonic clock, in nanoseconds. The
 * whole-millisecond fields cannot order two requests within one millisecond, and the fair queue's
 * picks (which waiting request a freed slot goes to) follow that order: a replay fed these times
 * queues, serves and ends its requests in the order the server did. Five numbers a record; written
 * at the record's writing, which is the request's end (admitted) or its refusal.
 */
public final class ReplayTimingPart implements DecisionRecordPart {
  private final Ticker ticker;

  /**
   * @param ticker the sessions' ticker (the time the session's arrival was read on)
   */
  public ReplayTimingPart(Ticker ticker) {
    this.ticker = ticker;
  }

  @Override
  public void write(RequestFacts facts, AdmissionRecord.Builder record) {
    long arrival = facts.subject().arrivalNanos();
    long ended = Math.max(0, ticker.nanos() - arrival);
    long admittedAt = facts.run().admittedAtNanos();
    long admitted = admittedAt != 0 ? Math.max(0, admittedAt - arrival) : 0;
    long wait = Math.max(0, facts.decision().queueWaitNanos());
    long decided = Math.max(0, (admittedAt != 0 ? admitted : ended) - wait);
    ReplayTiming.Builder t =
        ReplayTiming.newBuilder()
            .setArrivalTickNs(arrival)
            .setDecidedAfterNs(decided)
            .setEndedAfterNs(ended)
            .setDeadlineAfterNs(Math.max(0, facts.subject().deadlineNanos() - arrival));
    if (admittedAt != 0) {
      t.setAdmittedAfterNs(admitted);
    }
    record.setTiming(t);
  }
}
