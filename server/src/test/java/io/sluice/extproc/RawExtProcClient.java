package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.sluice.testing.RawBytes;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An ext_proc client that writes raw frames (its own byte[] marshaller), so a test can send bytes
 * protobuf-java refuses, as a broken or hostile client would.
 */
final class RawExtProcClient implements AutoCloseable {
  static final MethodDescriptor.Marshaller<byte[]> BYTES = RawBytes.MARSHALLER;

  static final MethodDescriptor<byte[], ProcessingResponse> RAW_PROCESS =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(
              BYTES, ProtoUtils.marshaller(ProcessingResponse.getDefaultInstance()))
          .build();

  private final ManagedChannel channel;

  RawExtProcClient(int port) {
    this.channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  Call open() {
    Call c = new Call(channel.newCall(RAW_PROCESS, CallOptions.DEFAULT));
    return c;
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  /** The wire bytes of {@code r} without its last {@code cut} bytes (a truncated frame). */
  static byte[] truncated(ProcessingRequest r, int cut) {
    byte[] b = r.toByteArray();
    return java.util.Arrays.copyOf(b, b.length - cut);
  }

  /** One stream. */
  static final class Call extends ClientCall.Listener<ProcessingResponse> {
    final BlockingQueue<ProcessingResponse> responses = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> closed = new CompletableFuture<>();
    private final ClientCall<byte[], ProcessingResponse> call;

    Call(ClientCall<byte[], ProcessingResponse> call) {
      this.call = call;
      call.start(this, new Metadata());
      call.request(Integer.MAX_VALUE);
    }

    @Override
    public void onMessage(ProcessingResponse message) {
      responses.add(message);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      closed.complete(status);
    }

    void sendOnly(byte[] frame) {
      call.sendMessage(frame);
    }

    ProcessingResponse send(ProcessingRequest r) throws InterruptedException {
      call.sendMessage(r.toByteArray());
      ProcessingResponse resp = responses.poll(5, TimeUnit.SECONDS);
      if (resp == null) {
        throw new AssertionError("no answer within 5 s to " + r.getRequestCase());
      }
      return resp;
    }

    void reset() {
      call.cancel("reset", null);
    }

    Status awaitClose() throws Exception {
      return closed.get(5, TimeUnit.SECONDS);
    }
  }
}
