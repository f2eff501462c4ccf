package io.sluice.extproc;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.sluice.observability.StreamTally;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The answering side of one ext_proc stream: sends answers while the stream is open, and closes it
 * exactly once (deregistered from the live streams, counted there by how it ended). Nothing is sent
 * after the close; ending the call (OK or not) is the closer's to do, once. The stream's superclass
 * ({@link ExtProcStream}), not an object of its own: one object less per stream.
 */
abstract class StreamOutput extends LiveStreams.Node {
  private static final Logger LOG = LoggerFactory.getLogger(ExtProcStream.class);

  private final ServerCallStreamObserver<Answer> call;
  final StreamFaults faults;
  private static final VarHandle CLOSED;

  static {
    try {
      CLOSED = MethodHandles.lookup().findVarHandle(StreamOutput.class, "closed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private volatile boolean closed; // set once (CLOSED): no AtomicBoolean per stream

  StreamOutput(ServerCallStreamObserver<Answer> call, StreamFaults faults) {
    this.call = call;
    this.faults = faults;
  }

  final boolean closed() {
    return closed;
  }

  /** Sends {@code answer}; false (nothing sent) once the stream is closed. */
  final boolean trySend(Answer answer) {
    if (closed) {
      return false;
    }
    faults.at(StreamFaults.Step.ANSWER);
    call.onNext(answer);
    return true;
  }

  /** Closes once; true for the call that closed (it then ends the call). */
  final <N extends LiveStreams.Node> boolean close(
      LiveStreams<N> live, N node, StreamTally.Close how) {
    if (!CLOSED.compareAndSet(this, false, true)) {
      return false;
    }
    live.remove(node, how); // counted there (sluice_extproc_streams_total)
    return true;
  }

  /** Ends the call non-OK (the caller closed it); a failing transport changes nothing here. */
  final void endWith(Status status) {
    try {
      call.onError(status.asRuntimeException());
    } catch (RuntimeException e) {
      LOG.debug("ending a failed stream", e);
    }
  }

  /** Ends the call OK: only after a graceful half-close with every message answered. */
  final void complete() {
    call.onCompleted();
  }
}
