package io.sluice.bench;

import picocli.CommandLine.Option;

/**
 * The floor's options of its method: whether the idle servers are paused, the order of each round's
 * windows, the generator's client event loops, and when the warm-up ends ({@link FloorJit}) (see
 * "The floor's method: the twin" in docs/benchmarks.md). Each default is the method since
 * 2026-12-06 evening (the JIT settle rule since 2026-12-07); each option restores the one before.
 * {@code --runs} repeats the whole measurement with fresh servers and pools the rounds ({@link
 * FloorPool}).
 */
final class FloorMethodOptions {
  @Option(
      names = "--pause-idle",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "with --separate: stop (SIGSTOP) every server's child JVM but the one being driven, in"
              + " warm-up and measured windows alike, so idle servers' GC, JIT and timers and the"
              + " aftermath of the window before do not run beside it; --no-pause-idle: all run,"
              + " as before 2026-12-06 evening (default: ${DEFAULT-VALUE})")
  boolean pauseIdle = true;

  @Option(
      names = "--order",
      description =
          "order of each round's windows: mirrored (rounds in pairs on one rotation, the second"
              + " reversed: a drift within the pair cancels in every target's ratio) or rotated"
              + " (rotated by one per round, as before 2026-12-06 evening) (default:"
              + " ${DEFAULT-VALUE})",
      defaultValue = "mirrored")
  String order = "mirrored";

  @Option(
      names = "--shared-client-loops",
      description =
          "the generator's channels to all targets share one group of two client event loops (as"
              + " before 2026-12-06 evening); by default each target has two of its own")
  boolean sharedClientLoops;

  @Option(
      names = "--jit-settle-share",
      description =
          "the warm-up (at least --warmup s) goes on, cycle after cycle, until in every server's"
              + " last warm cycle its JIT compiler threads took less than this share of its CPU;"
              + " 0: a fixed warm-up of --warmup s, as before 2026-12-07 (default: ${DEFAULT-VALUE})",
      defaultValue = "0.02")
  double jitSettleShare = 0.02;

  @Option(
      names = "--warmup-max",
      description =
          "seconds after which the warm-up stops though some server's JIT has not settled, and the"
              + " floor names it (default: ${DEFAULT-VALUE})",
      defaultValue = "300")
  int warmupMaxSeconds = 300;

  @Option(
      names = "--runs",
      description =
          "with --separate: the whole measurement this many times, each run with fresh server JVMs"
              + " and a warm-up of its own; after the last, each target's rate ÷ the no-op's pooled"
              + " over every round of every run (median, quartiles) beside each run's median: a"
              + " verdict that one run's JIT and placement do not decide (default: ${DEFAULT-VALUE})",
      defaultValue = "1")
  int runs = 1;
}
