package io.sluice.observability;

import io.sluice.core.admission.Reason;
import io.sluice.core.session.SessionFront;
import java.util.ArrayList;
import java.util.List;

/**
 * A front end that only notes what it was told: a refusal as {@code refused <code>}, followed by
 * {@code <status>} when {@code withStatus}. Shared by the recorder tests.
 */
final class RecordingFront implements SessionFront {
  final List<String> calls = new ArrayList<>();
  String message = "";
  private final boolean withStatus;

  RecordingFront(boolean withStatus) {
    this.withStatus = withStatus;
  }

  @Override
  public void admitted(boolean atBody) {
    calls.add("admitted");
  }

  @Override
  public void bodyWanted() {}

  @Override
  public void held(long holdMillis) {
    calls.add("held");
  }

  @Override
  public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
    calls.add("refused " + reason.code() + (withStatus ? " " + status : ""));
    this.message = message;
  }

  @Override
  public void storeFailed(Throwable cause) {
    calls.add("storeFailed");
  }
}
