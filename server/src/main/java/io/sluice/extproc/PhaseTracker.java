package io.sluice.extproc;

import io.sluice.config.SluiceConfig;

/**
 * Where one ext_proc stream is in Envoy's exchange: its {@link StreamPhase}, whether a message
 * waits for its answer, and when the stream last heard from or answered Envoy (the silence bounds
 * count from there). Touched in the stream's serial context; the idle sweep's first read from
 * another thread is only a hint (the check that acts re-reads it in the stream's context). The
 * stream's {@link EnvoyRequest} extends it (one object per stream for both).
 */
sealed class PhaseTracker permits EnvoyRequest {
  private StreamPhase phase = StreamPhase.START;
  private boolean headersSeen;
  private boolean outstanding; // received and not answered yet (a hold's override answers nothing)
  private boolean localReply; // the first message was response_headers: nothing to decide
  private long lastActivityNanos;

  PhaseTracker(long nowNanos) {
    this.lastActivityNanos = nowNanos;
  }

  StreamPhase phase() {
    return phase;
  }

  boolean is(StreamPhase p) {
    return phase == p;
  }

  void to(StreamPhase p) {
    phase = p;
  }

  /** Request trailers may come while the request is decided or being decided. */
  boolean requestOpen() {
    return phase != StreamPhase.START && phase != StreamPhase.DONE;
  }

  /** Response messages flow while admitted, and after the release (late chunks, trailers). */
  boolean responding(boolean permit) {
    return phase == StreamPhase.ADMITTED || (phase == StreamPhase.DONE && permit);
  }

  /** A message arrived: it is owed an answer. */
  void received(long nowNanos) {
    lastActivityNanos = nowNanos;
    outstanding = true;
  }

  /** A message was answered. */
  void answered(long nowNanos) {
    outstanding = false;
    lastActivityNanos = nowNanos;
  }

  /** The message is owed an answer after all (a hold), or none (chunks after an Immediate). */
  void owes(boolean answer) {
    outstanding = answer;
  }

  boolean outstanding() {
    return outstanding;
  }

  void headersSeen() {
    headersSeen = true;
  }

  /** Nothing of the request came: the stream carries an earlier filter's local reply. */
  boolean first() {
    return phase == StreamPhase.START && !headersSeen;
  }

  /**
   * The first message was {@code response_headers}: a local reply sent before the request reached
   * ext_proc. Its messages are passed through; there is no request to decide.
   */
  void localReply() {
    localReply = true;
    phase = StreamPhase.DONE;
  }

  boolean isLocalReply() {
    return localReply;
  }

  String undecidedTag() {
    return phase.undecidedTag(headersSeen);
  }

  /** The phase's silence bound when the stream has been silent past it at {@code now}, else 0. */
  long silentPast(long nowNanos, boolean permit, SluiceConfig.Streams limits) {
    long bound = phase.idleBoundNanos(headersSeen, outstanding, permit, limits);
    return bound > 0 && nowNanos - lastActivityNanos > bound ? bound : 0;
  }

  long silentNanos(long nowNanos) {
    return nowNanos - lastActivityNanos;
  }
}
