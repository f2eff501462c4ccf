package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.CodedInputStream;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.sluice.testing.RawBytes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sluice never answers one inbound message with more than one ProcessingResponse: read as the raw
 * bytes of each gRPC message (protobuf's parser would merge two concatenated responses into one and
 * hide them), every message Sluice writes carries at most one field of the {@code response} oneof,
 * and each inbound message gets at most one such message (a queue-hold's {@code
 * override_message_timeout}-only message is not an answer). Envoy before the fix for CVE-2026-47207
 * crashed on a gRPC message packing several ProcessingResponses.
 */
class OneAnswerPerMessageTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      estimation: {learnedReserve: {enabled: false}}
      pools:
        gpu: {capacity: 1000, maxMessageTimeout: 3s, holdMargin: 200ms, defaultServiceTime: 1s}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 2s, deadline: 30s,
                      defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      unmatched: {action: reject}
      """;

  /** The response oneof's field numbers in ProcessingResponse (request_headers .. immediate). */
  private static final int FIRST_ONEOF = 1;

  private static final int LAST_ONEOF = 7;

  private static final MethodDescriptor<ProcessingRequest, byte[]> RAW_ANSWERS =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(
              ProtoUtils.marshaller(ProcessingRequest.getDefaultInstance()), RawBytes.MARSHALLER)
          .build();

  private ManagedChannel channel;

  @Override
  protected String policy() {
    return CONFIG;
  }

  @BeforeEach
  void channel() {
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
  }

  @AfterEach
  void closeChannel() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  /** A stream that keeps each gRPC message Sluice writes as its bytes. */
  private final class Stream extends ClientCall.Listener<byte[]> {
    final BlockingQueue<byte[]> messages = new LinkedBlockingQueue<>();
    final ClientCall<ProcessingRequest, byte[]> call =
        channel.newCall(RAW_ANSWERS, CallOptions.DEFAULT);
    final List<String> log = new ArrayList<>();

    Stream() {
      call.start(this, new Metadata());
      call.request(Integer.MAX_VALUE);
    }

    @Override
    public void onMessage(byte[] message) {
      messages.add(message);
    }

    /**
     * Sends {@code r}; returns its one answer, after any override-only messages, and checks that
     * nothing else follows within {@code quietMs}.
     */
    ProcessingResponse send(ProcessingRequest r, long quietMs) throws Exception {
      call.sendMessage(r);
      ProcessingResponse answer = null;
      while (answer == null) {
        byte[] m = messages.poll(5, TimeUnit.SECONDS);
        assertThat(m).as("an answer to " + r.getRequestCase()).isNotNull();
        int oneofs = oneofFields(m);
        assertThat(oneofs).as("response oneof fields in one gRPC message").isLessThanOrEqualTo(1);
        ProcessingResponse p = ProcessingResponse.parseFrom(m);
        if (oneofs == 0) {
          assertThat(p.hasOverrideMessageTimeout()).as("a message without an answer").isTrue();
          log.add("override");
          continue;
        }
        answer = p;
        log.add(p.getResponseCase().name());
      }
      assertThat(messages.poll(quietMs, TimeUnit.MILLISECONDS))
          .as("a second message for one " + r.getRequestCase())
          .isNull();
      return answer;
    }
  }

  /** How many top-level fields of the response oneof the message's bytes carry. */
  static int oneofFields(byte[] message) throws Exception {
    CodedInputStream in = CodedInputStream.newInstance(message);
    int n = 0;
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      int field = tag >>> 3;
      if (field >= FIRST_ONEOF && field <= LAST_ONEOF) {
        n++;
      }
      in.skipField(tag);
    }
    return n;
  }

  private static String chatBody(int maxTokens) {
    return "{\"model\":\"llama\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  @Test
  void admitHoldRefuseAndStreamedResponse_eachInboundMessage_atMostOneAnswer() throws Exception {
    Stream a = new Stream();
    assertThat(
            a.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED), 100)
                .hasRequestHeaders())
        .isTrue();
    assertThat(a.send(body(chatBody(990)), 100).hasRequestBody()).isTrue();

    // b waits for room: an override first, its one answer when a ends
    Stream b = new Stream();
    b.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED), 100);
    b.call.sendMessage(body(chatBody(500)));
    byte[] hold = b.messages.poll(5, TimeUnit.SECONDS);
    assertThat(hold).isNotNull();
    assertThat(oneofFields(hold)).isZero();
    assertThat(ProcessingResponse.parseFrom(hold).hasOverrideMessageTimeout()).isTrue();

    assertThat(a.send(responseHeaders(200, "text/event-stream", false), 100).hasResponseHeaders())
        .isTrue();
    for (int i = 0; i < 3; i++) {
      assertThat(a.send(responseBody("data: {\"choices\":[]}\n\n", false), 50).hasResponseBody())
          .isTrue();
    }
    assertThat(a.send(responseBody("data: [DONE]\n\n", true), 50).hasResponseBody()).isTrue();
    // a's end frees the room: b's body message gets exactly one answer
    byte[] bAnswer = b.messages.poll(5, TimeUnit.SECONDS);
    assertThat(bAnswer).isNotNull();
    assertThat(oneofFields(bAnswer)).isEqualTo(1);
    assertThat(ProcessingResponse.parseFrom(bAnswer).hasRequestBody()).isTrue();
    assertThat(b.messages.poll(200, TimeUnit.MILLISECONDS)).isNull();

    // a refusal at the headers is one ImmediateResponse, nothing after it
    Stream c = new Stream();
    ProcessingResponse refused =
        c.send(
            headers(
                java.util.Map.of(":method", "POST", ":path", "/nowhere"),
                false,
                BodySendMode.BUFFERED,
                BodySendMode.STREAMED),
            200);
    assertThat(refused.hasImmediateResponse()).isTrue();
    for (Stream s : List.of(a, b, c)) {
      s.call.cancel("done", null);
    }
  }

  @Test
  void oneofCount_seesTwoConcatenatedResponses() throws Exception {
    byte[] one = Responses.CONTINUE_REQUEST_HEADERS.bytes();
    byte[] two = new byte[one.length * 2];
    System.arraycopy(one, 0, two, 0, one.length);
    System.arraycopy(one, 0, two, one.length, one.length);
    assertThat(oneofFields(one)).isEqualTo(1);
    // protobuf parses the pair as one response: only the raw count sees two
    assertThat(ProcessingResponse.parseFrom(two).hasRequestHeaders()).isTrue();
    assertThat(oneofFields(two)).isEqualTo(2);
  }
}
