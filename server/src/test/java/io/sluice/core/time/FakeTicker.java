package io.sluice.core.time;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker for tests: starts at a large value so overflow and "zero means unset" bugs show. */
public final class FakeTicker implements Ticker {
  private final AtomicLong now;

  public FakeTicker() {
    this(Long.MAX_VALUE - Duration.ofDays(1).toNanos());
  }

  public FakeTicker(long startNanos) {
    this.now = new AtomicLong(startNanos);
  }

  @Override
  public long nanos() {
    return now.get();
  }

  public FakeTicker advance(Duration d) {
    now.addAndGet(d.toNanos());
    return this;
  }

  public FakeTicker advanceNanos(long nanos) {
    now.addAndGet(nanos);
    return this;
  }
}
