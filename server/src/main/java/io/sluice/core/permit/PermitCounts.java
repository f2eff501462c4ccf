package io.sluice.core.permit;

import java.util.concurrent.atomic.AtomicLong;

/** The {@link PermitDesk}'s counters ({@link PermitDesk#counts}); thread-safe. */
final class PermitCounts {
  final AtomicLong granted = new AtomicLong();
  final AtomicLong queued = new AtomicLong();
  final AtomicLong refused = new AtomicLong();
  final AtomicLong expired = new AtomicLong();
  final AtomicLong released = new AtomicLong();
  final AtomicLong releasedElsewhere = new AtomicLong();
  final AtomicLong releasedAfterExpiry = new AtomicLong();

  /** Granted, queued, refused, expired, released, released elsewhere, released after expiry. */
  long[] snapshot() {
    return new long[] {
      granted.get(),
      queued.get(),
      refused.get(),
      expired.get(),
      released.get(),
      releasedElsewhere.get(),
      releasedAfterExpiry.get()
    };
  }
}
