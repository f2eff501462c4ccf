package io.sluice.store;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A wall clock for tests that only moves when told to. */
public final class MutableClock extends Clock {
  private final AtomicLong millis;

  public MutableClock(Instant start) {
    this.millis = new AtomicLong(start.toEpochMilli());
  }

  public MutableClock advance(Duration d) {
    millis.addAndGet(d.toMillis());
    return this;
  }

  public void set(Instant instant) {
    millis.set(instant.toEpochMilli());
  }

  @Override
  public long millis() {
    return millis.get();
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis.get());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }
}
