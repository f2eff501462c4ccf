package io.sluice.harness;

import java.util.concurrent.atomic.AtomicLong;

/** One HTTP attempt of a {@link Logical} request. */
final class Attempt {
  final Logical logical;
  final String id;
  final long startNanos;
  final boolean voluntary;
  final AtomicLong tokens = new AtomicLong();
  final AtomicLong tokensTotal = new AtomicLong(); // including tokens after the result (trace)
  volatile int number;
  volatile long upstreamAtNanos = -1;
  volatile long admittedAtNanos = -1;
  volatile long endNanos = -1;
  volatile String ending = "open";
  volatile long ttfbNanos = -1;
  boolean admitted;
  boolean done;

  Attempt(Logical logical, String id, long startNanos, boolean voluntary) {
    this.logical = logical;
    this.id = id;
    this.startNanos = startNanos;
    this.voluntary = voluntary;
  }
}
