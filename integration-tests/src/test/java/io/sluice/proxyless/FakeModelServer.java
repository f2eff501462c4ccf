package io.sluice.proxyless;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A gRPC "model server" behind the proxyless client: {@code sluice.test.Llm/Generate} (unary) and
 * {@code sluice.test.Llm/Stream} (server streaming: one message now, the rest when released).
 * Messages are UTF-8 strings. In HOLD mode every call waits until {@link #releaseAll()}; the server
 * counts calls in flight and the most it ever saw at once.
 *
 * <p>Every message is sent {@link #ANSWER_DELAY_MS} after the call arrives, never from inside the
 * call's start: grpc-java 1.85.1's ext_proc client loses the first response message when it arrives
 * before its delayed call has handed the listener over (DelayedClientCall queues the InputStream,
 * ClientCallImpl closes it when onMessage returns, and the queued delivery then reads released
 * buffers: CANCELLED "Failed to read message."). A model that answers within microseconds of the
 * call's start hits that window on a loaded machine; real models never answer that fast. See
 * docs/envoy.md#proxyless-grpc.
 */
final class FakeModelServer implements AutoCloseable {
  static final String SERVICE = "sluice.test.Llm";

  /** How long after its arrival a call's first message is sent (unless held). */
  static final long ANSWER_DELAY_MS = 30;

  private static final ScheduledExecutorService TIMER =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "fake-model-timer");
            t.setDaemon(true);
            return t;
          });
  static final MethodDescriptor.Marshaller<String> UTF8 =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
          return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
          try {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
  static final MethodDescriptor<String, String> GENERATE =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Generate"))
          .setRequestMarshaller(UTF8)
          .setResponseMarshaller(UTF8)
          .build();
  static final MethodDescriptor<String, String> STREAM =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
          .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Stream"))
          .setRequestMarshaller(UTF8)
          .setResponseMarshaller(UTF8)
          .build();

  private final Server server;
  private volatile boolean hold;
  private volatile Status failWith; // null: answer; else every unary call fails with it, no message
  private final AtomicInteger calls = new AtomicInteger();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger maxInFlight = new AtomicInteger();
  private final AtomicInteger cancelled = new AtomicInteger();
  private final ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();
  private final List<io.grpc.Metadata> headers = new ArrayList<>();

  FakeModelServer() {
    ServerServiceDefinition svc =
        ServerServiceDefinition.builder(SERVICE)
            .addMethod(GENERATE, ServerCalls.asyncUnaryCall(this::generate))
            .addMethod(STREAM, ServerCalls.asyncServerStreamingCall(this::stream))
            .build();
    try {
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(
                  io.grpc.ServerInterceptors.intercept(
                      svc,
                      new io.grpc.ServerInterceptor() {
                        @Override
                        public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(
                            io.grpc.ServerCall<Q, R> call,
                            io.grpc.Metadata h,
                            io.grpc.ServerCallHandler<Q, R> next) {
                          synchronized (headers) {
                            headers.add(h);
                          }
                          return next.startCall(call, h);
                        }
                      }))
              .build()
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  int port() {
    return server.getPort();
  }

  /** Calls wait (no answer) until {@link #releaseAll()}. */
  void hold(boolean on) {
    hold = on;
  }

  /**
   * Unary calls fail with {@code status} before any message (a trailers-only response); null: they
   * answer again.
   */
  void failWith(Status status) {
    failWith = status;
  }

  int calls() {
    return calls.get();
  }

  int inFlight() {
    return inFlight.get();
  }

  int maxInFlight() {
    return maxInFlight.get();
  }

  int cancelled() {
    return cancelled.get();
  }

  /** The request headers of every call that reached this server. */
  List<io.grpc.Metadata> headers() {
    synchronized (headers) {
      return new ArrayList<>(headers);
    }
  }

  /** Answers every held call (and every one that arrives while releasing). */
  void releaseAll() {
    Runnable r;
    while ((r = held.poll()) != null) {
      r.run();
    }
  }

  private void enter(StreamObserver<String> out) {
    calls.incrementAndGet();
    int now = inFlight.incrementAndGet();
    maxInFlight.accumulateAndGet(now, Math::max);
    ServerCallStreamObserver<String> o = (ServerCallStreamObserver<String>) out;
    o.setOnCancelHandler(
        () -> {
          cancelled.incrementAndGet();
          inFlight.decrementAndGet();
        });
  }

  private void generate(String prompt, StreamObserver<String> out) {
    enter(out);
    Runnable answer =
        () -> {
          synchronized (out) {
            if (((ServerCallStreamObserver<String>) out).isCancelled()) {
              return;
            }
            inFlight.decrementAndGet();
            Status failure = failWith;
            if (failure != null) {
              out.onError(failure.asRuntimeException()); // trailers-only: no headers, no message
              return;
            }
            out.onNext("reply to " + prompt);
            out.onCompleted();
          }
        };
    if (hold) {
      held.add(answer);
    } else {
      later(answer);
    }
  }

  private void stream(String prompt, StreamObserver<String> out) {
    enter(out);
    AtomicBoolean firstSent = new AtomicBoolean();
    Runnable first =
        () -> {
          synchronized (out) {
            if (!((ServerCallStreamObserver<String>) out).isCancelled()
                && firstSent.compareAndSet(false, true)) {
              out.onNext("first token of " + prompt);
            }
          }
        };
    Runnable rest =
        () -> {
          synchronized (out) {
            first.run(); // released before its first token's time: that token goes first
            if (((ServerCallStreamObserver<String>) out).isCancelled()) {
              return;
            }
            inFlight.decrementAndGet();
            out.onNext("last token");
            out.onCompleted();
          }
        };
    later(first);
    if (hold) {
      held.add(rest);
    } else {
      later(rest);
    }
  }

  private static void later(Runnable r) {
    TIMER.schedule(r, ANSWER_DELAY_MS, TimeUnit.MILLISECONDS);
  }

  /** A unary call through {@code channel}. */
  static String generate(Channel channel, CallOptions options, String prompt) {
    return ClientCalls.blockingUnaryCall(channel, GENERATE, options, prompt);
  }

  static ClientCall<String, String> newStreamCall(Channel channel, CallOptions options) {
    return channel.newCall(STREAM, options);
  }

  static Status statusOf(Throwable t) {
    return Status.fromThrowable(t);
  }

  @Override
  public void close() {
    releaseAll();
    server.shutdownNow();
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
