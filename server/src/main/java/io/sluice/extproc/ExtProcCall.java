package io.sluice.extproc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * One ext_proc call as grpc-java's {@code ServerCalls.asyncBidiStreamingCall} runs it, without its
 * per-call costs that Sluice does not need: the stream's initial metadata is handed to {@code open}
 * directly (no thread-local around {@code startCall}), and a reset (the end of every stream Envoy
 * drives) does not build a {@link StatusRuntimeException} with a stack trace for the request
 * observer's {@code onError}: the cancel is told by the same shared instance each time. Everything
 * else is the stub's contract: one message requested at the start and one after each, {@code
 * onCompleted} at the half-close, the cancel handler and then {@code onError} (unless half-closed)
 * at a cancel, answers after a cancel dropped when a cancel handler is set (else refused), response
 * headers sent before the first answer, {@code onError}'s status and trailers from its throwable.
 *
 * <p>Concurrency: grpc-java calls the listener serially; the answering side is called from the
 * stream's serial executor (one thread at a time), as with the stub's observer.
 */
final class ExtProcCall extends ServerCallStreamObserver<Answer>
    implements ServerCallHandler<Inbound, Answer> {
  /** What the request observer's {@code onError} gets at a cancel: one instance, no stack trace. */
  @SuppressWarnings("StaticAssignmentOfThrowable") // preallocated and stackless on purpose (above)
  static final StatusRuntimeException CANCELLED =
      new StatusRuntimeException(Status.CANCELLED.withDescription("client cancelled"), null) {
        @Override
        public synchronized Throwable fillInStackTrace() {
          return this;
        }
      };

  private final @Nullable ServerCall<Inbound, Answer> call;
  private final BiFunction<ServerCallStreamObserver<Answer>, Metadata, StreamObserver<Inbound>>
      open;
  private volatile boolean cancelled;
  private boolean sentHeaders;
  private boolean aborted;
  private boolean completed;
  private @Nullable Runnable onCancel;
  private @Nullable Runnable onReady;
  private @Nullable Runnable onClose;

  /** The handler: each call gets an {@link ExtProcCall} of its own, opened by {@code open}. */
  static ServerCallHandler<Inbound, Answer> handler(
      BiFunction<ServerCallStreamObserver<Answer>, Metadata, StreamObserver<Inbound>> open) {
    return new ExtProcCall(null, open);
  }

  private ExtProcCall(
      @Nullable ServerCall<Inbound, Answer> call,
      BiFunction<ServerCallStreamObserver<Answer>, Metadata, StreamObserver<Inbound>> open) {
    this.call = call;
    this.open = open;
  }

  @Override
  public ServerCall.Listener<Inbound> startCall(ServerCall<Inbound, Answer> call, Metadata md) {
    ExtProcCall out = new ExtProcCall(call, open);
    StreamObserver<Inbound> in = open.apply(out, md);
    call.request(1);
    return out.new Listener(in);
  }

  private ServerCall<Inbound, Answer> call() {
    ServerCall<Inbound, Answer> c = call;
    if (c == null) {
      throw new IllegalStateException("the handler is not a call");
    }
    return c;
  }

  /** The request side: grpc-java's events to the stream's observer. */
  private final class Listener extends ServerCall.Listener<Inbound> {
    private final StreamObserver<Inbound> in;
    private boolean halfClosed;

    Listener(StreamObserver<Inbound> in) {
      this.in = in;
    }

    @Override
    public void onMessage(Inbound message) {
      in.onNext(message);
      call().request(1);
    }

    @Override
    public void onHalfClose() {
      halfClosed = true;
      in.onCompleted();
    }

    @Override
    public void onCancel() {
      cancelled = true;
      Runnable r = onCancel;
      if (r != null) {
        r.run();
      }
      if (!halfClosed) {
        in.onError(CANCELLED);
      }
    }

    @Override
    public void onReady() {
      Runnable r = onReady;
      if (r != null) {
        r.run();
      }
    }

    @Override
    public void onComplete() {
      Runnable r = onClose;
      if (r != null) {
        r.run();
      }
    }
  }

  // --- the answering side (the stub's ServerCallStreamObserver contract)

  @Override
  public void onNext(Answer answer) {
    if (cancelled) {
      if (onCancel == null) {
        throw Status.CANCELLED
            .withDescription(
                "call already cancelled. Use ServerCallStreamObserver.setOnCancelHandler() to disable this exception")
            .asRuntimeException();
      }
      return;
    }
    if (aborted) {
      throw new IllegalStateException(
          "Stream was terminated by error, no further calls are allowed");
    }
    if (completed) {
      throw new IllegalStateException("Stream is already completed, no further calls are allowed");
    }
    ServerCall<Inbound, Answer> c = call();
    if (!sentHeaders) {
      c.sendHeaders(new Metadata());
      sentHeaders = true;
    }
    c.sendMessage(answer);
  }

  @Override
  public void onError(Throwable t) {
    Metadata trailers = Status.trailersFromThrowable(t);
    call().close(Status.fromThrowable(t), trailers == null ? new Metadata() : trailers);
    aborted = true;
  }

  @Override
  public void onCompleted() {
    call().close(Status.OK, new Metadata());
    completed = true;
  }

  @Override
  public boolean isCancelled() {
    return call().isCancelled();
  }

  @Override
  public boolean isReady() {
    return call().isReady();
  }

  @Override
  public void setOnCancelHandler(Runnable handler) {
    onCancel = handler;
  }

  @Override
  public void setOnReadyHandler(Runnable handler) {
    onReady = handler;
  }

  @Override
  public void setOnCloseHandler(Runnable handler) {
    onClose = handler;
  }

  @Override
  public void setCompression(String compression) {
    call().setCompression(compression);
  }

  @Override
  public void setMessageCompression(boolean enable) {
    call().setMessageCompression(enable);
  }

  @Override
  public void disableAutoInboundFlowControl() {
    throw new UnsupportedOperationException("ext_proc streams request one message at a time");
  }

  @Override
  public void request(int count) {
    call().request(count);
  }
}
