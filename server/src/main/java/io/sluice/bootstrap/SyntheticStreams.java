package io.sluice.bootstrap;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.Channel;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.sluice.config.SluiceConfig;
import io.sluice.core.estimate.RequestFormat;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Envoy's side of whole ext_proc streams, for synthetic traffic: request headers (with the protocol
 * configuration: request body BUFFERED, response body STREAMED), the request body, response headers
 * and response body chunks, each message sent after the previous answer as Envoy does. Used by the
 * warm-up before readiness ({@link WarmUp}) and by {@code sluice-bench coldstart}.
 *
 * <p>Not thread-safe per stream; {@link #run} blocks its caller (never a gRPC transport thread).
 */
public final class SyntheticStreams {
  /** Tenant id the warm-up streams carry (gRPC initial metadata {@code x-sluice-tenant}). */
  public static final String WARMUP_TENANT = "sluice-warmup";

  /**
   * One synthetic request.
   *
   * @param name what it exercises (for logs)
   * @param path {@code :path}
   * @param requestBody the JSON body
   * @param status the upstream's {@code :status}
   * @param responseContentType the upstream's content type
   * @param responseChunks the upstream's body, chunk by chunk
   */
  public record Exchange(
      String name,
      String path,
      String requestBody,
      int status,
      String responseContentType,
      List<String> responseChunks) {}

  /**
   * How one stream went.
   *
   * @param ok every message answered within the timeout and the stream ended without a transport
   *     error
   * @param admitted whether Sluice let the request through (no immediate response)
   * @param maxMessageNanos the slowest answer to one message (what Envoy's message_timeout bounds)
   * @param firstDecisionNanos from request headers sent to the answer that decided (the request
   *     body's, or an immediate response)
   * @param totalNanos the whole stream
   */
  public record Result(
      String name,
      boolean ok,
      boolean admitted,
      long maxMessageNanos,
      long firstDecisionNanos,
      long totalNanos,
      @Nullable String error) {}

  private SyntheticStreams() {}

  /** Initial metadata Envoy would send for a warm-up stream. */
  public static Metadata warmupMetadata() {
    Metadata md = new Metadata();
    md.put(Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER), WARMUP_TENANT);
    return md;
  }

  /**
   * A few KB of varied prose: long enough that the tokenizer's loops get hot (the JIT compiles by
   * invocation and loop counts), unlike any real prompt (the warm-up's own token cache is thrown
   * away anyway).
   */
  private static final String PROSE = prose(2000);

  private static String prose(int chars) {
    String[] words = {
      "the", "gateway", "admits", "requests", "when", "capacity", "allows", "tokens", "queue",
      "tenant", "budget", "model", "stream", "latency", "answer", "envoy", "upstream", "permit"
    };
    StringBuilder sb = new StringBuilder(chars + 16);
    for (int i = 0; sb.length() < chars; i++) {
      sb.append(words[(i * 7 + i / 3) % words.length]);
      sb.append(i % 11 == 10 ? ". " : i % 5 == 4 ? ", " : " ");
      if (i % 17 == 0) {
        sb.append(Integer.toString(i * 7919, 36)).append(' ');
      }
    }
    return sb.toString();
  }

  private static final String CHAT =
      "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful"
          + " assistant.\"},{\"role\":\"user\",\"content\":\"Warm-up: summarise. "
          + PROSE
          + "\"}],\"max_tokens\":16}";
  private static final String CHAT_STREAM =
      "{\"model\":\"gpt-4\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
          + "\"messages\":[{\"role\":\"user\",\"content\":\"Warm-up, streamed: "
          + PROSE
          + "\"}],\"max_tokens\":16}";
  private static final String MESSAGES =
      "{\"model\":\"claude-3-5-sonnet-latest\",\"max_tokens\":16,\"system\":\"Be brief.\","
          + "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Warm-up"
          + " hello\"}]}]}";
  private static final String RESPONSES =
      "{\"model\":\"gpt-4o-mini\",\"input\":\"Warm-up: one word.\",\"max_output_tokens\":16}";
  private static final String COMPLETIONS =
      "{\"model\":\"gpt-3.5-turbo-instruct\",\"prompt\":\"Warm-up:\",\"max_tokens\":8}";
  private static final String EMBEDDINGS =
      "{\"model\":\"text-embedding-3-small\",\"input\":[\"warm\",\"up\"]}";

  private static final String CHAT_ANSWER =
      "{\"id\":\"w\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":"
          + "{\"role\":\"assistant\",\"content\":\"Hello there, nice to meet.\"},"
          + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":24,"
          + "\"completion_tokens\":7,\"total_tokens\":31}}";

  private static final List<String> CHAT_SSE =
      List.of(
          "data: {\"id\":\"w\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
              + "\"delta\":{\"content\":\"One, two\"}}]}\n\n",
          "data: {\"id\":\"w\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
              + "\"delta\":{\"content\":\", three.\"},\"finish_reason\":\"stop\"}]}\n\n"
              + "data: {\"id\":\"w\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
              + "\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":5,\"total_tokens\":19}}\n\n",
          "data: [DONE]\n\n");

  /** A body of {@code format} for a route of the operator's config. */
  private static String bodyFor(RequestFormat format) {
    return switch (format) {
      case ANTHROPIC_MESSAGES -> MESSAGES;
      case OPENAI_RESPONSES -> RESPONSES;
      case OPENAI_COMPLETIONS -> COMPLETIONS;
      case OPENAI_EMBEDDINGS -> EMBEDDINGS;
      default -> CHAT;
    };
  }

  private static String answerFor(RequestFormat format) {
    return switch (format) {
      case ANTHROPIC_MESSAGES ->
          "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
              + "\"text\":\"Hi\"}],\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}";
      case OPENAI_RESPONSES ->
          "{\"object\":\"response\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":"
              + "\"output_text\",\"text\":\"Hi\"}]}],\"usage\":{\"input_tokens\":9,"
              + "\"output_tokens\":2,\"total_tokens\":11}}";
      case OPENAI_COMPLETIONS ->
          "{\"choices\":[{\"text\":\" ok\"}],\"usage\":{\"prompt_tokens\":3,"
              + "\"completion_tokens\":1,\"total_tokens\":4}}";
      case OPENAI_EMBEDDINGS ->
          "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"embedding\":[0.1,0.2]}],"
              + "\"usage\":{\"prompt_tokens\":2,\"total_tokens\":2}}";
      default -> CHAT_ANSWER;
    };
  }

  /**
   * The exchanges a warm-up runs for {@code config}: one per configured route with a path (in its
   * format), the common LLM API paths (JSON and SSE answers, both BPE encodings, the heuristic), an
   * unreadable body, an upstream 429 and an unmatched path.
   */
  public static List<Exchange> forConfig(SluiceConfig config) {
    List<Exchange> out = new ArrayList<>();
    Set<String> paths = new LinkedHashSet<>();
    for (SluiceConfig.RouteRule r : config.routes()) {
      String path = r.matchPath() != null ? r.matchPath() : r.matchPathPrefix();
      if (path == null || !paths.add(path) || out.size() >= 8) {
        continue;
      }
      out.add(json("route " + r.name(), path, bodyFor(r.format()), answerFor(r.format())));
    }
    out.add(json("chat", "/v1/chat/completions", CHAT, CHAT_ANSWER));
    out.add(
        new Exchange(
            "chat streamed",
            "/v1/chat/completions",
            CHAT_STREAM,
            200,
            "text/event-stream",
            CHAT_SSE));
    out.add(
        json("messages", "/v1/messages", MESSAGES, answerFor(RequestFormat.ANTHROPIC_MESSAGES)));
    out.add(
        json("responses", "/v1/responses", RESPONSES, answerFor(RequestFormat.OPENAI_RESPONSES)));
    out.add(
        json(
            "completions",
            "/v1/completions",
            COMPLETIONS,
            answerFor(RequestFormat.OPENAI_COMPLETIONS)));
    out.add(
        json(
            "embeddings",
            "/v1/embeddings",
            EMBEDDINGS,
            answerFor(RequestFormat.OPENAI_EMBEDDINGS)));
    out.add(json("unreadable body", "/v1/chat/completions", "{\"model\": \"gpt-4o\", [", "{}"));
    out.add(
        new Exchange(
            "upstream 429",
            "/v1/chat/completions",
            CHAT,
            429,
            "application/json",
            List.of("{\"error\":{\"message\":\"rate limited\"}}")));
    out.add(json("unmatched", "/sluice-warmup/unmatched", CHAT, CHAT_ANSWER));
    return out;
  }

  private static Exchange json(String name, String path, String body, String answer) {
    return new Exchange(name, path, body, 200, "application/json", List.of(answer));
  }

  private static final Object END = new Object();

  /** Runs one whole stream over {@code channel}; never throws. */
  public static Result run(Channel channel, Metadata md, Exchange ex, Duration messageTimeout) {
    LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    long start = System.nanoTime();
    StreamObserver<ProcessingRequest> requests;
    try {
      requests =
          ExternalProcessorGrpc.newStub(channel)
              .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md))
              .withDeadlineAfter(messageTimeout.toNanos() * 8, TimeUnit.NANOSECONDS)
              .process(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(ProcessingResponse value) {
                      answers.add(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                      answers.add(t);
                    }

                    @Override
                    public void onCompleted() {
                      answers.add(END);
                    }
                  });
    } catch (RuntimeException e) {
      return new Result(ex.name(), false, false, 0, 0, 0, e.toString());
    }
    Stream s = new Stream(requests, answers, messageTimeout);
    byte[] body = ex.requestBody().getBytes(StandardCharsets.UTF_8);
    try {
      ProcessingResponse r =
          s.send(
              ProcessingRequest.newBuilder()
                  .setRequestHeaders(
                      HttpHeaders.newBuilder()
                          .setHeaders(
                              headers(
                                  Map.of(
                                      ":method", "POST",
                                      ":path", ex.path(),
                                      ":authority", "sluice-warmup",
                                      ":scheme", "http",
                                      "content-type", "application/json",
                                      "content-length", Integer.toString(body.length)))))
                  .setProtocolConfig(
                      ProtocolConfiguration.newBuilder()
                          .setRequestBodyMode(BodySendMode.BUFFERED)
                          .setResponseBodyMode(BodySendMode.STREAMED))
                  .build());
      long decided = System.nanoTime() - start;
      if (r != null && !r.hasImmediateResponse()) {
        r =
            s.send(
                ProcessingRequest.newBuilder()
                    .setRequestBody(
                        HttpBody.newBuilder()
                            .setBody(ByteString.copyFrom(body))
                            .setEndOfStream(true))
                    .build());
        decided = System.nanoTime() - start;
      }
      boolean admitted = r != null && !r.hasImmediateResponse();
      if (admitted) {
        r =
            s.send(
                ProcessingRequest.newBuilder()
                    .setResponseHeaders(
                        HttpHeaders.newBuilder()
                            .setHeaders(
                                headers(
                                    Map.of(
                                        ":status",
                                        Integer.toString(ex.status()),
                                        "content-type",
                                        ex.responseContentType()))))
                    .build());
        for (int i = 0; r != null && i < ex.responseChunks().size(); i++) {
          r =
              s.send(
                  ProcessingRequest.newBuilder()
                      .setResponseBody(
                          HttpBody.newBuilder()
                              .setBody(ByteString.copyFromUtf8(ex.responseChunks().get(i)))
                              .setEndOfStream(i == ex.responseChunks().size() - 1))
                      .build());
        }
      }
      if (s.error == null) {
        requests.onCompleted();
        s.awaitEnd();
      } else {
        requests.onError(new IllegalStateException(s.error));
      }
      return new Result(
          ex.name(),
          s.error == null,
          admitted,
          s.maxNanos,
          decided,
          System.nanoTime() - start,
          s.error);
    } catch (RuntimeException e) {
      requests.onError(e);
      return new Result(
          ex.name(), false, false, s.maxNanos, 0, System.nanoTime() - start, e.toString());
    }
  }

  private static HeaderMap headers(Map<String, String> h) {
    HeaderMap.Builder b = HeaderMap.newBuilder();
    // pseudo-headers first, as Envoy sends them
    h.entrySet().stream()
        .sorted((a, c) -> Boolean.compare(!a.getKey().startsWith(":"), !c.getKey().startsWith(":")))
        .forEach(
            e ->
                b.addHeaders(
                    HeaderValue.newBuilder()
                        .setKey(e.getKey())
                        .setRawValue(ByteString.copyFromUtf8(e.getValue()))));
    return b.build();
  }

  /** One stream's message loop: send, then wait for the answer that is not a timeout override. */
  private static final class Stream {
    final StreamObserver<ProcessingRequest> requests;
    final LinkedBlockingQueue<Object> answers;
    final long timeoutNanos;
    long maxNanos;
    @Nullable String error;
    boolean ended;

    Stream(
        StreamObserver<ProcessingRequest> requests,
        LinkedBlockingQueue<Object> answers,
        Duration timeout) {
      this.requests = requests;
      this.answers = answers;
      this.timeoutNanos = timeout.toNanos();
    }

    /** The answer, or null (and {@link #error} set) on timeout, error or an early end. */
    @Nullable ProcessingResponse send(ProcessingRequest req) {
      if (error != null || ended) {
        return null;
      }
      long t0 = System.nanoTime();
      requests.onNext(req);
      long deadline = t0 + timeoutNanos;
      while (true) {
        Object a;
        try {
          a = answers.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          error = "interrupted";
          return null;
        }
        if (a == null) {
          error =
              "no answer to "
                  + req.getRequestCase()
                  + " within "
                  + timeoutNanos / 1_000_000
                  + " ms";
          return null;
        }
        if (a instanceof Throwable t) {
          error = t.toString();
          return null;
        }
        if (a == END) {
          ended = true;
          error = "stream ended before answering " + req.getRequestCase();
          return null;
        }
        ProcessingResponse r = (ProcessingResponse) a;
        if (r.hasOverrideMessageTimeout()
            && r.getResponseCase() == ProcessingResponse.ResponseCase.RESPONSE_NOT_SET) {
          continue; // queue-hold: the real answer follows
        }
        maxNanos = Math.max(maxNanos, System.nanoTime() - t0);
        return r;
      }
    }

    void awaitEnd() {
      long deadline = System.nanoTime() + timeoutNanos;
      while (!ended) {
        Object a;
        try {
          a = answers.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
        if (a == null) {
          error = "stream not closed within " + timeoutNanos / 1_000_000 + " ms of the last answer";
          return;
        }
        if (a == END) {
          ended = true;
        } else if (a instanceof Throwable t) {
          error = t.toString();
          return;
        }
      }
    }
  }
}
