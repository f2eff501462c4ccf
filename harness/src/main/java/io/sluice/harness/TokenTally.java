package io.sluice.harness;

import io.sluice.upstream.SimulatedLlmUpstream;

/**
 * A run's tokens: the upstream's counters when the run began, the useful ones, and the wasted ones
 * by why the client left; the counts behind {@link RunReport.Tokens}. Not thread-safe: changed and
 * read under its {@link RunTally}'s lock.
 */
final class TokenTally {
  private final SimulatedLlmUpstream upstream;
  private final long promptSpent0;
  private final long completionSpent0;
  private long useful;
  private long onMissedDeadlines;
  private long onHangUps;
  private long onHangUpsAfterWaiting;

  TokenTally(SimulatedLlmUpstream upstream) {
    this.upstream = upstream;
    this.promptSpent0 = upstream.promptTokensSpent();
    this.completionSpent0 = upstream.completionTokensSpent();
  }

  long promptSpent0() {
    return promptSpent0;
  }

  long completionSpent0() {
    return completionSpent0;
  }

  /** The tokens an attempt spent until its client left: a hang-up or a missed deadline. */
  void leftMidway(Attempt a, Logical l) {
    if (a.voluntary && l.hangsUpAnyway) {
      onHangUps += a.tokens.get();
    } else if (a.voluntary) {
      onHangUpsAfterWaiting += a.tokens.get();
    } else {
      onMissedDeadlines += a.tokens.get();
    }
  }

  /** {@code l} completed: its prompt and answer were useful. */
  void completed(Logical l) {
    useful +=
        SimulatedLlmUpstream.promptTokens(l.body.length, upstream.settings()) + l.outputTokens;
  }

  /** The tokens spent since the run began; {@code unfinished} and {@code afterClientLeft}. */
  RunReport.Tokens report(long unfinished, long afterClientLeft) {
    return new RunReport.Tokens(
        upstream.promptTokensSpent() - promptSpent0,
        upstream.completionTokensSpent() - completionSpent0,
        useful,
        unfinished,
        onMissedDeadlines,
        onHangUps,
        onHangUpsAfterWaiting,
        afterClientLeft);
  }
}
