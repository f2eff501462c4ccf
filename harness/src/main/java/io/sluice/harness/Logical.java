package io.sluice.harness;

import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.UpstreamRequest;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/** One logical request of a load run: an arrival, whatever its retries. */
final class Logical {
  final Workload.RequestClass requestClass;
  final Workload.Tenant tenant;
  final int phaseIndex;
  final long arrivalNanos;
  final long deadlineNanos;
  final long cancelAtNanos;
  final byte[] body;
  final int outputTokens;
  volatile int attempt;
  volatile long ttftNanos;
  final AtomicInteger attemptsSent = new AtomicInteger();
  final AtomicBoolean told = new AtomicBoolean();
  final List<LoadGenerator.Try> tries = new CopyOnWriteArrayList<>();
  volatile HttpHeaders lastHeaders = HttpHeaders.of();
  volatile Optional<UpstreamRequest> lastUpstreamRequest = Optional.empty();
  boolean reachedUpstream; // guarded by the run
  long upstreamAtNanos; // guarded by the run

  /** Served on arrival at full speed, its client would still hang up before the answer ends. */
  boolean hangsUpAnyway;

  Logical(
      Workload.RequestClass requestClass,
      Workload.Tenant tenant,
      int phaseIndex,
      long arrivalNanos,
      long deadlineNanos,
      long cancelAtNanos,
      byte[] body,
      int outputTokens) {
    this.requestClass = requestClass;
    this.tenant = tenant;
    this.phaseIndex = phaseIndex;
    this.arrivalNanos = arrivalNanos;
    this.deadlineNanos = deadlineNanos;
    this.cancelAtNanos = cancelAtNanos;
    this.body = body;
    this.outputTokens = outputTokens;
  }
}
