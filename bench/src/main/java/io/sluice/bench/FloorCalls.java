package io.sluice.bench;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The floor's workloads: what one call of each shape sends, as the closed loop's {@code oneCall}.
 *
 * <ul>
 *   <li>{@code oneshot}: {@code request_headers} with end_of_stream, then half-close;
 *   <li>{@code llm}: the LLM-shaped stream of the harness's {@code LlmStream} (request headers, a
 *       1.9 KB buffered chat body, response headers, a 0.5 KB JSON answer with usage), each message
 *       sent when the previous one was answered, then a reset as Envoy closes it;
 *   <li>{@code headers-only}: the same request decided at its headers from Envoy's native AI
 *       metadata (request body NONE, the typed request info at the headers, the typed token usage
 *       with the answer's last chunk: {@code LlmStream.headersOnlyMessages}), then a reset;
 *   <li>{@code rls}: one unary {@code ShouldRateLimit} (build-notes §7's request).
 * </ul>
 */
enum FloorCalls {
  ONESHOT,
  LLM,
  HEADERS_ONLY,
  RLS;

  private static final Metadata.Key<String> TENANT =
      Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER);

  /**
   * ext_proc as the generator calls it: requests encoded by protobuf as before, answers read only
   * as far as which message they are ({@link AnswerKind}), so every target's answer costs the
   * generator the same whatever metadata or mutations it carries (Envoy reads them on its own
   * cores, not Sluice's). {@code --parse-answers} restores protobuf's full parse.
   */
  static final MethodDescriptor<ProcessingRequest, ProcessingResponse> PARSED =
      ExternalProcessorGrpc.getProcessMethod();

  static final MethodDescriptor<ProcessingRequest, AnswerKind> SKIMMED =
      PARSED.toBuilder(PARSED.getRequestMarshaller(), AnswerKind.MARSHALLER).build();

  /** RLS with the answer parsed by protobuf ({@code --parse-answers}). */
  static final MethodDescriptor<RateLimitRequest, RateLimitResponse> RLS_PARSED =
      RateLimitServiceGrpc.getShouldRateLimitMethod();

  /**
   * RLS as the generator calls it: the answer read only as far as its overall code ({@link
   * AnswerKind#overallCode}), as ext_proc's answers are read only as far as their kind.
   */
  static final MethodDescriptor<RateLimitRequest, Integer> RLS_SKIMMED =
      RLS_PARSED.toBuilder(RLS_PARSED.getRequestMarshaller(), AnswerKind.RLS_CODE).build();

  /** The name on the command line and in the tables. */
  String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** {@code oneshot}, {@code llm} (or its old name {@code envoy}), {@code rls}. */
  static FloorCalls parse(String s) {
    return switch (s) {
      case "oneshot" -> ONESHOT;
      case "llm", "envoy" -> LLM;
      case "headers-only" -> HEADERS_ONLY;
      case "rls" -> RLS;
      default ->
          throw new IllegalArgumentException(
              "shape: " + s + " (expected oneshot, llm, headers-only or rls)");
    };
  }

  /** The targets this workload measures (RLS: no refusing ext_proc policy to tell apart). */
  List<String> targets(boolean redis, boolean baseline) {
    List<String> all = new java.util.ArrayList<>(List.of("noop", "sluice"));
    if (baseline) {
      all.add("sluice-baseline");
    }
    if (this != RLS) {
      all.add("sluice-reject");
    }
    if (redis) {
      all.add("sluice-redis");
    }
    return all;
  }

  /** The phase whose decision latency Sluice's histogram reports for this workload, or null. */
  String phase() {
    return switch (this) {
      case ONESHOT, HEADERS_ONLY -> "headers";
      case LLM -> "body";
      case RLS -> "";
    };
  }

  /**
   * One call of this shape; it reports its end to the consumer and never blocks. {@code
   * parseAnswers}: the generator parses every ext_proc and RLS answer with protobuf (the
   * generator's old way, {@code --parse-answers}), else it reads only which answer it is (an RLS
   * answer: its overall code).
   */
  BiConsumer<Channel, Consumer<Boolean>> call(boolean parseAnswers) {
    return switch (this) {
      case ONESHOT -> {
        ProcessingRequest req = FloorMessages.request();
        yield parseAnswers
            ? (ch, finish) -> oneShot(ch, PARSED, req, finish)
            : (ch, finish) -> oneShot(ch, SKIMMED, req, finish);
      }
      case LLM -> {
        List<ProcessingRequest> messages = FloorMessages.envoyShapedMessages();
        yield parseAnswers
            ? (ch, finish) ->
                llmStream(ch, PARSED, ProcessingResponse::hasImmediateResponse, messages, finish)
            : (ch, finish) -> llmStream(ch, SKIMMED, AnswerKind::refused, messages, finish);
      }
      case HEADERS_ONLY -> {
        List<ProcessingRequest> messages = io.sluice.harness.LlmStream.headersOnlyMessages();
        yield parseAnswers
            ? (ch, finish) ->
                llmStream(ch, PARSED, ProcessingResponse::hasImmediateResponse, messages, finish)
            : (ch, finish) -> llmStream(ch, SKIMMED, AnswerKind::refused, messages, finish);
      }
      case RLS -> {
        RateLimitRequest req = FloorMessages.rlsRequest();
        yield parseAnswers
            ? (ch, finish) -> rls(ch, RLS_PARSED, r -> r.getOverallCode() == Code.OK, req, finish)
            : (ch, finish) -> rls(ch, RLS_SKIMMED, code -> code == Code.OK_VALUE, req, finish);
      }
    };
  }

  private static <A> void oneShot(
      Channel ch,
      MethodDescriptor<ProcessingRequest, A> method,
      ProcessingRequest req,
      Consumer<Boolean> finish) {
    ClientCall<ProcessingRequest, A> call = ch.newCall(method, CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            finish.accept(status.isOk());
          }
        },
        metadata());
    call.request(2);
    call.sendMessage(req);
    call.halfClose();
  }

  /**
   * One LLM-shaped stream: each message is sent when the previous one was answered; after the last
   * answer the client resets the stream (Envoy's close), which ends it CANCELLED. A {@link
   * ClientCall} is not thread-safe: the first message is sent by whichever thread starts the stream
   * (the driver's, for each window's first streams) while its answer may already arrive on the
   * channel's event loop, whose listener sends the next one; both hold the call's monitor (grpc's
   * framer otherwise fails "null frame before EOS").
   */
  private static <A> void llmStream(
      Channel ch,
      MethodDescriptor<ProcessingRequest, A> method,
      Predicate<A> isRefusal,
      List<ProcessingRequest> messages,
      Consumer<Boolean> finish) {
    ClientCall<ProcessingRequest, A> call = ch.newCall(method, CallOptions.DEFAULT);
    int[] answered = {0};
    boolean[] refused = {false};
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(A message) {
            synchronized (call) {
              answered[0]++;
              refused[0] = isRefusal.test(message);
              if (refused[0] || answered[0] == messages.size()) {
                call.cancel("end of request", null);
              } else {
                call.sendMessage(messages.get(answered[0]));
                call.request(1);
              }
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            finish.accept(refused[0] || answered[0] == messages.size()); // refused = answered
          }
        },
        metadata());
    synchronized (call) {
      call.request(1);
      call.sendMessage(messages.get(0));
    }
  }

  private static <A> void rls(
      Channel ch,
      MethodDescriptor<RateLimitRequest, A> method,
      Predicate<A> isOk,
      RateLimitRequest req,
      Consumer<Boolean> finish) {
    ClientCall<RateLimitRequest, A> call = ch.newCall(method, CallOptions.DEFAULT);
    boolean[] ok = {false};
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(A message) {
            ok[0] = isOk.test(message);
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            finish.accept(status.isOk() && ok[0]);
          }
        },
        new Metadata());
    call.request(2);
    call.sendMessage(req);
    call.halfClose();
  }

  /** A fresh Metadata per call: grpc takes ownership of the headers object. */
  private static Metadata metadata() {
    Metadata md = new Metadata();
    md.put(TENANT, "acme");
    return md;
  }
}
