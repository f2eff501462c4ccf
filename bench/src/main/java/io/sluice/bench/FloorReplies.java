package io.sluice.bench;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.sluice.bench.FloorServers.Sluice;
import io.sluice.wire.EncodedStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Target {@code noop-answers}: the no-op's server (grpc-java's stub, protobuf parsing each request,
 * direct executor) answering each message with <em>the bytes Sluice answered that message
 * with</em>, so the floor can split Sluice's extra CPU into what its answers cost the transport
 * ({@code noop-answers} − {@code noop}) and what its own logic costs ({@code sluice} − {@code
 * noop-answers}). The answers are captured once, before the floor starts, from a Sluice on the same
 * policy as target {@code sluice}: {@link #WARM} streams of each workload, the last one's answers
 * kept (the learned estimates have settled by then; they are doubles of fixed size anyway). With
 * {@code --separate} a JVM of its own captures them ({@code floor --capture-answers FILE}) and the
 * server's JVM only reads the file, so no Sluice code ever ran in it (its JIT profiles are the
 * no-op's); in one JVM, or as a lone {@code --serve noop-answers}, the server captures them itself.
 * They are sent pre-encoded, as Sluice sends its own ({@link EncodedStream}).
 */
final class FloorReplies {
  private FloorReplies() {}

  /** Streams of each workload run against the capturing Sluice; the last one's answers are kept. */
  static final int WARM = 64;

  /**
   * Sluice's answers to one stream of each workload, in order.
   *
   * @param rls the RateLimitResponse of the floor's RLS call
   */
  record Captured(List<byte[]> oneShot, List<byte[]> llm, List<byte[]> headersOnly, byte[] rls) {
    /** Writes the answers to {@code file} ({@link #read} reads them back). */
    void write(Path file) throws IOException {
      try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(file))) {
        for (List<byte[]> answers : List.of(oneShot, llm, headersOnly, List.of(rls))) {
          out.writeInt(answers.size());
          for (byte[] a : answers) {
            out.writeInt(a.length);
            out.write(a);
          }
        }
      }
    }

    static Captured read(Path file) throws IOException {
      try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
        List<List<byte[]>> lists = new ArrayList<>();
        for (int l = 0; l < 4; l++) {
          List<byte[]> answers = new ArrayList<>();
          for (int n = in.readInt(); n > 0; n--) {
            answers.add(in.readNBytes(in.readInt()));
          }
          lists.add(List.copyOf(answers));
        }
        return new Captured(lists.get(0), lists.get(1), lists.get(2), lists.get(3).get(0));
      }
    }

    /** The answers of the workload whose stream opens with {@code first}. */
    List<byte[]> of(ProcessingRequest first) {
      if (first.getRequestHeaders().getEndOfStream()) {
        return oneShot;
      }
      return first.hasMetadataContext() ? headersOnly : llm;
    }
  }

  /** A message's bytes as they are on the wire: read whole, written by draining. */
  static final MethodDescriptor.Marshaller<byte[]> RAW =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new EncodedStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          return FloodLoad.BYTES.parse(stream);
        }
      };

  /** ext_proc with the answers as their wire bytes (client: captured; server: sent). */
  static final MethodDescriptor<ProcessingRequest, byte[]> PROCESS_RAW =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(
              ExternalProcessorGrpc.getProcessMethod().getRequestMarshaller(), RAW)
          .build();

  static final MethodDescriptor<RateLimitRequest, byte[]> RLS_RAW =
      RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(
              RateLimitServiceGrpc.getShouldRateLimitMethod().getRequestMarshaller(), RAW)
          .build();

  /** Starts a Sluice on {@code policy} in this JVM and records its answers ({@link #WARM} each). */
  static Captured capture(String policy) throws IOException {
    try (Sluice sluice = new Sluice(policy, 0, null)) {
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", sluice.server.grpcPort())
              .usePlaintext()
              .build();
      try {
        return capture(ch);
      } finally {
        ch.shutdownNow();
      }
    }
  }

  /** The answers of the last of {@link #WARM} streams of each workload on {@code ch}. */
  static Captured capture(Channel ch) {
    List<byte[]> oneShot = List.of();
    List<byte[]> llm = List.of();
    List<byte[]> headersOnly = List.of();
    byte[] rls = new byte[0];
    for (int i = 0; i < WARM; i++) { // WARM > 0: each is the last stream's answers
      oneShot = stream(ch, List.of(FloorMessages.request()), false);
      llm = stream(ch, FloorMessages.envoyShapedMessages(), true);
      headersOnly = stream(ch, io.sluice.harness.LlmStream.headersOnlyMessages(), true);
      rls = rls(ch, FloorMessages.rlsRequest());
    }
    return new Captured(oneShot, llm, headersOnly, rls);
  }

  /**
   * One stream as the floor drives it: each message sent when the previous one was answered; then a
   * reset ({@code reset}) or a half-close. Returns the answers' bytes in order.
   */
  static List<byte[]> stream(Channel ch, List<ProcessingRequest> messages, boolean reset) {
    ClientCall<ProcessingRequest, byte[]> call = ch.newCall(PROCESS_RAW, CallOptions.DEFAULT);
    List<byte[]> answers = new ArrayList<>();
    CompletableFuture<List<byte[]>> done = new CompletableFuture<>();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(byte[] message) {
            answers.add(message);
            if (answers.size() < messages.size()) {
              call.sendMessage(messages.get(answers.size()));
              call.request(1);
            } else if (reset) {
              call.cancel("end of request", null);
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            done.complete(List.copyOf(answers));
          }
        },
        tenant());
    call.request(1);
    call.sendMessage(messages.get(0));
    if (!reset) {
      call.halfClose();
    }
    return await(done);
  }

  private static byte[] rls(Channel ch, RateLimitRequest req) {
    ClientCall<RateLimitRequest, byte[]> call = ch.newCall(RLS_RAW, CallOptions.DEFAULT);
    CompletableFuture<byte[]> done = new CompletableFuture<>();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(byte[] message) {
            done.complete(message);
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            done.completeExceptionally(new IllegalStateException("no RLS answer: " + status));
          }
        },
        new Metadata());
    call.request(1);
    call.sendMessage(req);
    call.halfClose();
    return await(done);
  }

  private static <T> T await(CompletableFuture<T> f) {
    try {
      return f.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("capturing Sluice's answers: " + e, e);
    }
  }

  private static Metadata tenant() {
    Metadata md = new Metadata();
    md.put(Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER), "acme");
    return md;
  }

  /** The no-op's server, answering with {@code answers}. */
  static final class Server implements AutoCloseable {
    final io.grpc.Server server;

    Server(Captured answers, int port) throws IOException {
      ServerServiceDefinition extProc =
          ServerServiceDefinition.builder(ExternalProcessorGrpc.SERVICE_NAME)
              .addMethod(
                  PROCESS_RAW,
                  ServerCalls.asyncBidiStreamingCall(responses -> new Replier(answers, responses)))
              .build();
      ServerServiceDefinition rls =
          ServerServiceDefinition.builder(RateLimitServiceGrpc.SERVICE_NAME)
              .addMethod(
                  RLS_RAW,
                  ServerCalls.asyncUnaryCall(
                      (RateLimitRequest req, StreamObserver<byte[]> out) -> {
                        out.onNext(answers.rls());
                        out.onCompleted();
                      }))
              .build();
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
              .directExecutor()
              .addService(extProc)
              .addService(rls)
              .build()
              .start();
    }

    @Override
    public void close() throws InterruptedException {
      FloorServers.stop(server);
    }
  }

  /** One stream: the i-th message gets the i-th of its workload's answers. */
  private static final class Replier implements StreamObserver<ProcessingRequest> {
    private final Captured all;
    private final StreamObserver<byte[]> responses;
    private List<byte[]> answers = List.of();
    private int next;

    Replier(Captured all, StreamObserver<byte[]> responses) {
      this.all = all;
      this.responses = responses;
    }

    @Override
    public void onNext(ProcessingRequest value) {
      if (next == 0) {
        answers = all.of(value);
      }
      if (next < answers.size()) {
        responses.onNext(answers.get(next++));
      }
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {
      responses.onCompleted();
    }
  }
}
