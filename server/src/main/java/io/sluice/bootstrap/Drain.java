package io.sluice.bootstrap;

import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import io.sluice.config.ConfigWriter;
import io.sluice.extproc.ExtProcService;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process's end, in order: stop accepting (health NOT_SERVING, new streams refused), answer the
 * queued (503 {@code shutting_down}), let in-flight streams finish within the grace, then cut what
 * remains and release its permits, release the held tails, stop gRPC and the timers, give the
 * replica shares back and flush what was learned to the stores, close the stores, the admin port
 * and the meters. Runs once; later calls return at once.
 */
final class Drain {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  static final int DRAIN_LOG_EVERY_SECONDS = 5;

  private final AtomicBoolean draining;
  private final ProcessServices services;
  private final HealthStatusManager health;
  private final ExtProcService extProc;
  private final Server grpc;
  private final AdminHttpServer admin;
  private final PermitApi permits;
  private final List<String> lines = new CopyOnWriteArrayList<>();

  Drain(
      AtomicBoolean draining,
      ProcessServices services,
      HealthStatusManager health,
      ExtProcService extProc,
      Server grpc,
      AdminHttpServer admin,
      PermitApi permits) {
    this.draining = draining;
    this.services = services;
    this.health = health;
    this.extProc = extProc;
    this.grpc = grpc;
    this.admin = admin;
    this.permits = permits;
  }

  /**
   * @param graceful false: as a crash ({@code halt}): nothing queued is answered and the replica
   *     shares are abandoned (left to expire on the store), not given back
   */
  void stop(Duration grace, String cause, boolean graceful) {
    if (!draining.compareAndSet(false, true)) {
      return;
    }
    ProcessServices s = services;
    long started = System.nanoTime();
    if (!graceful && s.store.shares != null) {
      s.store.shares.abandon(); // no more renewals, leases left to expire
    }
    health.enterTerminalState();
    s.dispatcher.close(); // no more claims; running jobs' leases lapse, another replica runs them
    int refused = graceful ? s.controller.refuseAllQueued(s.ticker.nanos()) : 0;
    int streamsAtStart = extProc.liveStreams();
    log(
        String.format(
            Locale.ROOT,
            "shutdown (%s): health NOT_SERVING, new streams refused; draining for up to %s:"
                + " %d ext_proc streams open, %d permits in flight, %d queued requests answered"
                + " 503 shutting_down",
            cause,
            ConfigWriter.duration(grace),
            streamsAtStart,
            s.permitsInFlight(),
            refused));
    awaitStreams(started, grace);
    int cut = extProc.liveStreams();
    int permitsCut = s.permitsInFlight();
    extProc.shutdownStreams();
    int tailsReleased = s.tails.releaseAll(); // their answers run on: outcome completed
    grpc.shutdown();
    try {
      grpc.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    grpc.shutdownNow();
    permits.close(); // every lease back to its pool
    s.housekeeping.shutdownNow();
    s.timer.close();
    if (s.store.rls != null) {
      s.store.rls.close();
    }
    if (s.store.shares != null && graceful) {
      s.store.shares
          .close(); // after the drain: this replica's leases go back to the others at once
    }
    // what each learner learned since the last exchange, for the next start
    s.store.learnedSharing.forEach(ReserveSharing::close);
    s.store.stores.close();
    s.telemetry.close(); // flushes the spans and metrics not yet exported
    admin.close();
    ProcessServices.closeQuietly(s.jvmMetrics);
    s.registry.close();
    log(
        String.format(
            Locale.ROOT,
            "shutdown complete in %d ms: %d of %d streams finished within the grace, %d cut"
                + " (%d permits released at the cut, %d of them held for a predicted tail)",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
            Math.max(0, streamsAtStart - cut),
            streamsAtStart,
            cut,
            permitsCut,
            tailsReleased));
  }

  /** Waits for the open streams to end, until the grace is over, logging the progress. */
  private void awaitStreams(long started, Duration grace) {
    long deadline = started + grace.toNanos();
    long nextLog = started + TimeUnit.SECONDS.toNanos(DRAIN_LOG_EVERY_SECONDS);
    while (extProc.liveStreams() > 0 && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      if (System.nanoTime() - nextLog >= 0) {
        nextLog += TimeUnit.SECONDS.toNanos(DRAIN_LOG_EVERY_SECONDS);
        log(
            String.format(
                Locale.ROOT,
                "shutdown: draining, %d s of %s: %d ext_proc streams open, %d permits in flight",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                ConfigWriter.duration(grace),
                extProc.liveStreams(),
                services.permitsInFlight()));
      }
    }
  }

  private void log(String line) {
    lines.add(line);
    LOG.info("{}", line);
  }

  /** What shutdown logged, in order (tests). */
  List<String> lines() {
    return List.copyOf(lines);
  }
}
