package io.sluice.rls;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.util.MutableHandlerRegistry;
import io.sluice.testing.RawBytes;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided: ShouldRateLimit calls through the real service adapter and the real gRPC call
 * path (an in-process server with Sluice's own request marshaller; the store in memory, the clock
 * fake). Each input is a program of calls (see {@link #calls}): a request built from a template
 * (domain, descriptors of the config's keys, unicode values, a request or descriptor hits_addend, a
 * limit override), a raw frame, or the clock moved on.
 *
 * <p>Every call must end with one answer the way Envoy's rate limit filter can use it: either OK
 * with one {@code RateLimitResponse} that parses, has one status per descriptor of the request, an
 * overall code that is OVER_LIMIT exactly when some status is, and no remaining count above its
 * limit; or a non-OK status that Sluice chose, with a description — never grpc's "Application error
 * processing RPC" (an exception that escaped the handler or the marshaller), never no answer at
 * all. Seeds: {@code RlsServiceFuzzTestInputs/shouldRateLimit/}, written by {@link
 * io.sluice.extproc.FuzzSeedWriter}.
 */
class RlsServiceFuzzTest {
  static final String CONFIG =
      """
      domain: envoy
      descriptors:
        - key: user
          rate_limit: {name: per_user, unit: second, requests_per_unit: 2}
        - key: free
          rate_limit: {unlimited: true}
        - key: path
          descriptors:
            - key: method
              rate_limit: {unit: minute, requests_per_unit: 5}
        - key: tenant
          value: acme
          rate_limit: {unit: hour, requests_per_unit: 1000}
      """;

  static final MethodDescriptor.Marshaller<byte[]> RAW = RawBytes.MARSHALLER;

  static final MethodDescriptor<byte[], byte[]> SHOULD_RATE_LIMIT_RAW =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName())
          .setRequestMarshaller(RAW)
          .setResponseMarshaller(RAW)
          .build();

  private static MutableHandlerRegistry services;
  private static Server server;
  private static ManagedChannel channel;

  @BeforeAll
  static void start() throws IOException {
    services = new MutableHandlerRegistry();
    String name = "rls-fuzz-" + System.nanoTime();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .fallbackHandlerRegistry(services)
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  @AfterAll
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  @FuzzTest(maxDuration = "5m")
  void shouldRateLimit(byte[] input) {
    RlsFixture f = new RlsFixture(CONFIG);
    services.addService(new RateLimitServiceAdapter(f.evaluator));
    StringBuilder trace = new StringBuilder();
    try {
      calls(input, f, trace);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "\ncalls:\n" + trace, e);
    }
  }

  static final int TEMPLATE = 0;
  static final int RAW_FRAME = 1;
  static final int ADVANCE = 2;

  /** Runs the program in {@code input}: op bytes, each followed by its arguments. */
  static void calls(byte[] input, RlsFixture f, StringBuilder trace) {
    int[] pos = {0};
    java.util.function.IntSupplier next = () -> pos[0] < input.length ? input[pos[0]++] & 0xff : 0;
    for (int n = 0; n < 32 && pos[0] < input.length; n++) {
      switch (next.getAsInt() % 3) {
        case TEMPLATE -> call(template(next), trace);
        case RAW_FRAME -> {
          int len = next.getAsInt();
          int from = Math.min(pos[0], input.length);
          int to = Math.min(input.length, from + len);
          pos[0] = to;
          call(Arrays.copyOfRange(input, from, to), trace);
        }
        default -> {
          int seconds = next.getAsInt();
          f.clock.advance(Duration.ofSeconds(seconds));
          trace.append("  advance ").append(seconds).append(" s\n");
        }
      }
    }
  }

  static final String[] KEYS = {"user", "free", "path", "method", "tenant", "other"};
  static final String[] VALUES = {"alice", "acme", "/v1/chat", "POST", "", "é", "x".repeat(300)};

  /** A request from the next bytes: domain, 0..3 descriptors of 1..2 entries, hits_addend. */
  static byte[] template(java.util.function.IntSupplier next) {
    int v = next.getAsInt();
    RateLimitRequest.Builder b =
        RateLimitRequest.newBuilder().setDomain(((v & 3) == 3) ? "" : (v & 1) == 0 ? "envoy" : "x");
    int descriptors = (v >>> 2) & 3;
    for (int i = 0; i < descriptors; i++) {
      int d = next.getAsInt();
      RateLimitDescriptor.Builder db = RateLimitDescriptor.newBuilder();
      int entries = 1 + (d & 1);
      for (int j = 0; j < entries; j++) {
        int e = next.getAsInt();
        db.addEntries(
            RateLimitDescriptor.Entry.newBuilder()
                .setKey(KEYS[e % KEYS.length])
                .setValue(VALUES[(e >>> 3) % VALUES.length]));
      }
      switch ((d >>> 1) & 3) {
        case 1 -> db.setHitsAddend(UInt64Value.of(next.getAsInt()));
        case 2 -> db.setHitsAddend(UInt64Value.of(-1L - next.getAsInt())); // >= 2^63 unsigned
        case 3 ->
            db.setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setUnitValue(next.getAsInt() % 8)
                    .setRequestsPerUnit(next.getAsInt()));
        default -> {}
      }
      b.addDescriptors(db);
    }
    switch ((v >>> 4) & 3) {
      case 1 -> b.setHitsAddend(next.getAsInt());
      case 2 -> b.setHitsAddend(-1 - next.getAsInt()); // uint32 above 2^31
      default -> {}
    }
    return b.build().toByteArray();
  }

  /** One call; checks its one answer. */
  static void call(byte[] frame, StringBuilder trace) {
    RateLimitRequest request;
    try {
      request = RateLimitRequest.parseFrom(frame);
    } catch (InvalidProtocolBufferException e) {
      request = null;
    }
    trace
        .append("  call ")
        .append(request == null ? "malformed" : "domain=" + request.getDomain())
        .append(" (")
        .append(frame.length <= 64 ? HexFormat.of().formatHex(frame) : frame.length + " bytes")
        .append(")\n");
    List<byte[]> answers = new ArrayList<>();
    Status[] closed = {null};
    ClientCall<byte[], byte[]> call = channel.newCall(SHOULD_RATE_LIMIT_RAW, CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(byte[] message) {
            answers.add(message);
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            closed[0] = status;
          }
        },
        new Metadata());
    call.request(2);
    call.sendMessage(frame);
    call.halfClose();
    Status status = closed[0];
    if (status == null) {
      call.cancel("no answer", null);
      throw new AssertionError("no answer (the call is still open)");
    }
    trace.append("    -> ").append(status.getCode()).append(' ').append(status.getDescription());
    trace.append('\n');
    if (!status.isOk()) {
      if (status.getDescription() == null
          || status.getDescription().equals("Application error processing RPC")) {
        throw new AssertionError(
            "ended " + status.getCode() + " " + status.getDescription() + ": not Sluice's answer",
            status.getCause());
      }
      if (!answers.isEmpty()) {
        throw new AssertionError("an answer and then " + status);
      }
      return;
    }
    if (answers.size() != 1) {
      throw new AssertionError("OK with " + answers.size() + " answers");
    }
    RateLimitResponse r;
    try {
      r = RateLimitResponse.parseFrom(answers.get(0));
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError("an answer that does not parse", e);
    }
    if (request == null) {
      throw new AssertionError("OK to a request that does not parse: " + r);
    }
    if (r.getStatusesCount() != request.getDescriptorsCount()) {
      throw new AssertionError(
          r.getStatusesCount() + " statuses for " + request.getDescriptorsCount() + " descriptors");
    }
    boolean over = false;
    for (RateLimitResponse.DescriptorStatus s : r.getStatusesList()) {
      over |= s.getCode() == RateLimitResponse.Code.OVER_LIMIT;
      if (s.hasCurrentLimit()
          && Integer.toUnsignedLong(s.getLimitRemaining())
              > Integer.toUnsignedLong(s.getCurrentLimit().getRequestsPerUnit())) {
        throw new AssertionError("remaining above the limit: " + s);
      }
    }
    RateLimitResponse.Code overall =
        over ? RateLimitResponse.Code.OVER_LIMIT : RateLimitResponse.Code.OK;
    if (r.getOverallCode() != overall) {
      throw new AssertionError("overall " + r.getOverallCode() + " with statuses " + r);
    }
  }
}
