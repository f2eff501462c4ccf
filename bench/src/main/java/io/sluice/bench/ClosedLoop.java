package io.sluice.bench;

import io.grpc.ManagedChannel;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.HdrHistogram.Histogram;

/**
 * A closed-loop gRPC load driver: {@code concurrency} calls in flight per channel, each finished
 * call starting the next, a warm-up, then a measured window (calls, errors, latency in µs, process
 * CPU). Shared by the transport floor and the rate limit benchmark.
 */
final class ClosedLoop {
  private ClosedLoop() {}

  /** What a measured window saw. */
  record Result(long done, long errors, Histogram latencyMicros, double seconds, double cpuCores) {
    double perSecond() {
      return done / seconds;
    }
  }

  /**
   * @param oneCall starts one call on the channel and reports its end to the consumer ({@code true}
   *     = OK); it must not block
   */
  static Result run(
      List<ManagedChannel> channels,
      int concurrency,
      int warmupSeconds,
      int durationSeconds,
      BiConsumer<ManagedChannel, Consumer<Boolean>> oneCall)
      throws InterruptedException {
    return run(channels, concurrency, warmupSeconds, durationSeconds, oneCall, () -> {}, () -> {});
  }

  /**
   * As above; {@code atStart} and {@code atEnd} run at the measured window's first and last instant
   * (the floor reads each server's CPU there).
   */
  static Result run(
      List<ManagedChannel> channels,
      int concurrency,
      int warmupSeconds,
      int durationSeconds,
      BiConsumer<ManagedChannel, Consumer<Boolean>> oneCall,
      Runnable atStart,
      Runnable atEnd)
      throws InterruptedException {
    AtomicBoolean measuring = new AtomicBoolean();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong done = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    Histogram hist = new Histogram(60_000_000L, 3);
    CountDownLatch finished = new CountDownLatch(channels.size() * concurrency);
    for (ManagedChannel ch : channels) {
      for (int i = 0; i < concurrency; i++) {
        new Runnable() {
          @Override
          public void run() {
            if (stop.get()) {
              finished.countDown();
              return;
            }
            long start = System.nanoTime();
            Runnable next = this;
            oneCall.accept(
                ch,
                ok -> {
                  if (measuring.get()) {
                    if (ok) {
                      done.incrementAndGet();
                      long micros = (System.nanoTime() - start) / 1000;
                      synchronized (hist) {
                        hist.recordValue(Math.min(micros, 60_000_000L));
                      }
                    } else {
                      errors.incrementAndGet();
                    }
                  }
                  next.run();
                });
          }
        }.run();
      }
    }
    Thread.sleep(warmupSeconds * 1000L);
    atStart.run();
    long cpu0 = processCpuNanos();
    long t0 = System.nanoTime();
    measuring.set(true);
    Thread.sleep(durationSeconds * 1000L);
    measuring.set(false);
    long t1 = System.nanoTime();
    atEnd.run();
    long cpu1 = processCpuNanos();
    stop.set(true);
    finished.await(10, TimeUnit.SECONDS);
    double secs = (t1 - t0) / 1e9;
    Histogram copy;
    synchronized (hist) {
      copy = hist.copy();
    }
    return new Result(done.get(), errors.get(), copy, secs, (cpu1 - cpu0) / 1e9 / secs);
  }

  static long processCpuNanos() {
    var os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : 0;
  }
}
