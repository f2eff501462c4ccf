package io.sluice.extproc;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The CPU time of one ext_proc call's handling between grpc-java's call and the stream's observer,
 * for the LLM-shaped stream's events (start, four messages each answered, then a reset): grpc's
 * stub ({@code ServerCalls.asyncBidiStreamingCall}, as Sluice bound it before, with the initial
 * metadata passed through a thread-local) against {@link ExtProcCall}. The events are delivered
 * {@code depth} frames down (default 50, about the event loop's depth at a reset), since the stub
 * builds a {@code StatusRuntimeException} with a stack trace at each reset. Plain loop, thread CPU
 * time, as {@link AdmittedStreamCpu}:
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.extproc.CallHandlerCpu stub|call [depth]
 * </pre>
 */
public final class CallHandlerCpu {
  private CallHandlerCpu() {}

  private static final ThreadLocal<Metadata> STARTING = new ThreadLocal<>();
  private static final Inbound MESSAGE = Inbound.malformed(null, "x");
  private static final Answer ANSWER = Responses.CONTINUE_RESPONSE_HEADERS;
  static long sink;

  public static void main(String[] args) {
    boolean stub = args[0].equals("stub");
    int depth = args.length > 1 ? Integer.parseInt(args[1]) : 50;
    ServerCallHandler<Inbound, Answer> handler =
        stub ? stubHandler() : ExtProcCall.handler(CallHandlerCpu::open);
    run(handler, depth, 300_000);
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    StringBuilder out = new StringBuilder(args[0] + " cpu ns/call (5 x 100k):");
    for (int k = 0; k < 5; k++) {
      long before = mx.getCurrentThreadCpuTime();
      run(handler, depth, 100_000);
      out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 100_000);
    }
    System.out.println(out);
  }

  private static ServerCallHandler<Inbound, Answer> stubHandler() {
    ServerCallHandler<Inbound, Answer> streaming =
        ServerCalls.asyncBidiStreamingCall(
            r -> open((ServerCallStreamObserver<Answer>) r, STARTING.get()));
    return (call, headers) -> {
      STARTING.set(headers);
      try {
        return streaming.startCall(call, headers);
      } finally {
        STARTING.remove();
      }
    };
  }

  /** The stream's side: answers each message, as ExtProcStream does, and notes the cancel. */
  private static StreamObserver<Inbound> open(ServerCallStreamObserver<Answer> out, Metadata md) {
    out.setOnCancelHandler(() -> sink++);
    return new StreamObserver<>() {
      @Override
      public void onNext(Inbound value) {
        out.onNext(ANSWER);
      }

      @Override
      public void onError(Throwable t) {
        sink += t.hashCode() & 1;
      }

      @Override
      public void onCompleted() {
        out.onCompleted();
      }
    };
  }

  private static void run(ServerCallHandler<Inbound, Answer> h, int depth, int calls) {
    if (depth > 0) {
      run(h, depth - 1, calls);
      return;
    }
    Metadata md = new Metadata();
    for (int i = 0; i < calls; i++) {
      Call call = new Call();
      ServerCall.Listener<Inbound> l = h.startCall(call, md);
      for (int m = 0; m < 4; m++) {
        l.onMessage(MESSAGE);
      }
      l.onCancel();
      sink += call.requested + call.sent;
    }
  }

  private static final class Call extends ServerCall<Inbound, Answer> {
    int requested;
    int sent;

    @Override
    public void request(int n) {
      requested += n;
    }

    @Override
    public void sendHeaders(Metadata headers) {
      sent++;
    }

    @Override
    public void sendMessage(Answer message) {
      sent++;
    }

    @Override
    public void close(Status status, Metadata trailers) {}

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }

    @Override
    public MethodDescriptor<Inbound, Answer> getMethodDescriptor() {
      return ExtProcService.PROCESS;
    }
  }
}
