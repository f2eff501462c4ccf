package io.sluice.extproc;

import io.grpc.netty.shaded.io.netty.util.HashedWheelTimer;
import io.grpc.netty.shaded.io.netty.util.Timeout;
import java.util.concurrent.TimeUnit;

/**
 * Expiry timers for held requests: Netty's {@link HashedWheelTimer} (10 ms ticks, one thread),
 * cheap for tens of thousands of pending timeouts. A timer fires at or after its deadline, never
 * before; the pool's hold margin covers the tick.
 */
public final class QueueTimer implements AutoCloseable, io.sluice.core.session.HoldTimer {
  private final HashedWheelTimer wheel =
      new HashedWheelTimer(
          r -> {
            Thread t = new Thread(r, "sluice-queue-timer");
            t.setDaemon(true);
            return t;
          },
          10,
          TimeUnit.MILLISECONDS,
          512);

  @Override
  public Handle schedule(long delayNanos, Runnable task) {
    Timeout t = wheel.newTimeout(x -> task.run(), Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    return t::cancel;
  }

  public int pending() {
    return (int) wheel.pendingTimeouts();
  }

  @Override
  public void close() {
    wheel.stop();
  }
}
