package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.session.RequestFacts;

/**
 * Fields a feature adds to every decision record ({@code sluice.v1.AdmissionRecord}) from the
 * facts, e.g. retry control's {@code attempt} from the note its check left ({@link
 * RequestFacts#note}). Registered by the feature beside its check and listener; the {@link
 * SessionRecorder} of each snapshot runs them, in order, after its own fields.
 */
@FunctionalInterface
public interface DecisionRecordPart {
  /** Adds the part's fields to {@code record} (leaves it as it is when it has nothing to say). */
  void write(RequestFacts facts, AdmissionRecord.Builder record);
}
