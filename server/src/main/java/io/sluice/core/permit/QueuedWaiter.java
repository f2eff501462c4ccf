package io.sluice.core.permit;

import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Waiter;
import io.sluice.core.session.DetachedChecks;
import org.jspecify.annotations.Nullable;

/** A queued acquire's waiter: its permit leased when it starts, its holds given back otherwise. */
final class QueuedWaiter implements Waiter {
  private final PermitDesk desk;
  private final PermitDesk.Request ask;
  private final DetachedChecks.@Nullable Holds holds;
  private final PermitDesk.Reply reply;
  volatile boolean gone;

  QueuedWaiter(
      PermitDesk desk,
      PermitDesk.Request ask,
      DetachedChecks.@Nullable Holds holds,
      PermitDesk.Reply reply) {
    this.desk = desk;
    this.ask = ask;
    this.holds = holds;
    this.reply = reply;
  }

  @Override
  public void admitted(Permit permit, long waitedNanos) {
    if (gone) {
      permit.release(Outcome.CANCELLED, desk.ticker().nanos());
      if (holds != null) {
        holds.release(false);
      }
      desk.book().left();
      return;
    }
    desk.granted(
        ask, permit, holds, reply, PermitDesk.Answer.Kind.QUEUED_THEN_GRANTED, waitedNanos);
  }

  @Override
  public void refused(Decision.Reject rejection, long waitedNanos) {
    if (holds != null) {
      holds.release(false);
    }
    desk.refused(rejection, reply, waitedNanos);
  }

  void cancelled() {
    gone = true;
    if (holds != null) {
      holds.release(false);
    }
    desk.book().left();
  }
}
