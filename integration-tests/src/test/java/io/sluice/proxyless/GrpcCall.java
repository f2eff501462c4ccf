package io.sluice.proxyless;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One call as the application sees it: every message, then the status and trailers, through a raw
 * {@link ClientCall} (a blocking stub would turn "OK without a message" into its own INTERNAL).
 */
final class GrpcCall {
  record Result(Status status, Metadata trailers, List<String> messages) {
    String trailer(String key) {
      return trailers.get(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER));
    }

    @Override
    public String toString() {
      return status + " " + trailers + " " + messages;
    }
  }

  private final ClientCall<String, String> call;
  private final List<String> messages = new CopyOnWriteArrayList<>();
  private final CompletableFuture<String> first = new CompletableFuture<>();
  final CompletableFuture<Result> done = new CompletableFuture<>();

  private GrpcCall(ClientCall<String, String> call) {
    this.call = call;
  }

  static GrpcCall start(
      Channel channel, MethodDescriptor<String, String> method, CallOptions options, String req) {
    GrpcCall c = new GrpcCall(channel.newCall(method, options));
    c.call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(String message) {
            c.messages.add(message);
            c.first.complete(message);
            c.call.request(1);
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            c.first.complete(null);
            c.done.complete(new Result(status, trailers, List.copyOf(c.messages)));
          }
        },
        new Metadata());
    c.call.request(1);
    c.call.sendMessage(req);
    c.call.halfClose();
    return c;
  }

  static Result unary(Channel channel, CallOptions options, String req) {
    return start(channel, FakeModelServer.GENERATE, options, req).result();
  }

  /** The first message (null when the call closed without one), at most 10 s. */
  String firstMessage() {
    try {
      return first.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("no first message", e);
    }
  }

  void cancel() {
    call.cancel("the test cancels", null);
  }

  /** The result, at most 10 s. */
  Result result() {
    try {
      return done.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("call did not close", e);
    }
  }
}
