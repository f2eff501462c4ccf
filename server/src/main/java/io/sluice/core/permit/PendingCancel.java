package io.sluice.core.permit;

import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * An acquire's cancel while its checks' stores answer, before its pool decided: a cancel then keeps
 * the pool from deciding; once it decided, the cancel is the pool's own (its queued place given
 * up). Thread-safe.
 */
final class PendingCancel implements PermitDesk.Cancel {

  private PermitDesk.@Nullable Cancel then;
  private boolean cancelled;

  /** Runs {@code decide} unless cancelled first: false when cancelled. */
  boolean then(Supplier<PermitDesk.Cancel> decide) {
    synchronized (this) {
      if (cancelled) {
        return false;
      }
    }
    PermitDesk.Cancel c = decide.get();
    boolean late;
    synchronized (this) {
      then = c;
      late = cancelled;
    }
    if (late) {
      c.cancel();
    }
    return true;
  }

  @Override
  public void cancel() {
    PermitDesk.Cancel c;
    synchronized (this) {
      cancelled = true;
      c = then;
    }
    if (c != null) {
      c.cancel();
    }
  }
}
