package io.sluice.harness;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import java.util.List;

/**
 * The ext_proc messages Envoy sends for one LLM request, as the transport floor ({@code
 * sluice-bench floor}) and the server's JMH {@code ExtProcStreamBenchmark} both send them: one
 * builder, so the two measure the same stream.
 *
 * <p>An LLM-shaped stream is four messages, each sent when the previous one was answered, then a
 * reset (Envoy's close): {@linkplain #requestHeaders request headers} with {@code protocol_config}
 * (request body BUFFERED, response body STREAMED), the {@linkplain #CHAT_BODY buffered chat body}
 * (about 1.9 KB, model {@code claude-sonnet-4-5}: estimated with the byte heuristic, not BPE),
 * response headers ({@code :status 200}, JSON), and the {@linkplain #ANSWER_BODY JSON answer}
 * (about 0.5 KB, with {@code usage}) with end_of_stream. A one-shot stream is {@link
 * #oneShotHeaders()} alone, then a half-close.
 */
public final class LlmStream {
  private LlmStream() {}

  /** The 11 request headers of the build notes' floor (all as {@code raw_value}). */
  private static final String[][] REQUEST_HEADERS = {
    {":authority", "llm.example.com"},
    {":path", "/v1/chat/completions"},
    {":method", "POST"},
    {":scheme", "https"},
    {"content-type", "application/json"},
    {"authorization", "Bearer sk-0123456789abcdef0123456789abcdef"},
    {"user-agent", "openai-python/1.40.0"},
    {"x-request-id", "7f8e9d0c-1b2a-4c3d-8e9f-0a1b2c3d4e5f"},
    {"x-forwarded-for", "10.0.0.1"},
    {"x-forwarded-proto", "https"},
    {"x-tenant-id", "acme"}
  };

  /** A chat completion request of about 1.9 KB: a system prompt, two turns, a question. */
  public static final String CHAT_BODY =
      "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":256,\"temperature\":0.2,\"stream\":false,"
          + "\"messages\":[{\"role\":\"system\",\"content\":\"You are a careful assistant for an"
          + " engineering team. Answer in plain English, keep answers short, and say when you"
          + " are not sure. When you summarise, keep the names of people, systems and dates"
          + " exactly as written. Do not invent action items: list only what the notes say."
          + " If a decision is unclear, say so and name who should decide. Format lists as"
          + " bullet points of one sentence each. Never include credentials, tokens or"
          + " customer data in an answer, even if the notes contain them.\"},"
          + "{\"role\":\"user\",\"content\":\"Here are the notes of Tuesday's planning meeting."
          + " Attendees: Ana (storage), Bo (gateway), Chen (billing), Dee (support). 1. The"
          + " gateway's p99 latency rose from 40 ms to 65 ms after the last release; Bo thinks"
          + " it is the new TLS session cache and will roll it back on Thursday unless Ana's"
          + " storage fix lands first. 2. Billing will move the monthly export from 02:00 to"
          + " 04:00 UTC so it no longer overlaps the backup window; Chen owns the change and"
          + " will tell finance. 3. Support saw 37 tickets about slow uploads last week, most"
          + " from one region; Dee will collect request ids and share them with Ana. 4. The"
          + " team agreed to freeze schema changes until the 14th. 5. Open question: who"
          + " approves the new retention policy, legal or the data team? 6. Ana asked everyone"
          + " to review the incident write-up from the 2nd before Friday; comments go in the"
          + " shared document, not in chat. 7. The next meeting moves to Wednesday because of"
          + " the public holiday, same time, same room, and Dee will send the invitation.\"},"
          + "{\"role\":\"assistant\",\"content\":\"Thanks, I have the notes. What would you"
          + " like me to do with them?\"},"
          + "{\"role\":\"user\",\"content\":\"Summarise the notes in three bullet points, then"
          + " list the action items with their owners and dates, and the open questions.\"}]}";

  /** An OpenAI chat completion answer of about 0.5 KB, with {@code usage}. */
  public static final String ANSWER_BODY =
      "{\"id\":\"chatcmpl-9f8e7d6c5b4a\",\"object\":\"chat.completion\",\"created\":1764950400,"
          + "\"model\":\"claude-sonnet-4-5\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
          + "\"assistant\",\"content\":\"- The gateway's p99 rose to 65 ms; Bo rolls back the TLS"
          + " session cache on Thursday unless Ana's fix lands.\\n- Billing's export moves to"
          + " 04:00 UTC (Chen).\\n- Schema changes are frozen until the 14th.\\nOpen: who"
          + " approves the retention policy.\"},\"finish_reason\":\"stop\"}],"
          + "\"usage\":{\"prompt_tokens\":412,\"completion_tokens\":71,\"total_tokens\":483}}";

  /** The request headers with end_of_stream: the one-shot stream's only message. */
  public static ProcessingRequest oneShotHeaders() {
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(
            HttpHeaders.newBuilder().setHeaders(requestHeaderMap()).setEndOfStream(true))
        .build();
  }

  /** The request headers of an LLM-shaped stream: a body follows, with the protocol config. */
  public static ProcessingRequest requestHeaders() {
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(requestHeaderMap()))
        .setProtocolConfig(
            ProtocolConfiguration.newBuilder()
                .setRequestBodyMode(BodySendMode.BUFFERED)
                .setResponseBodyMode(BodySendMode.STREAMED))
        .build();
  }

  /** The four messages of an LLM-shaped stream, in the order Envoy sends them. */
  public static List<ProcessingRequest> messages() {
    return List.of(
        requestHeaders(),
        body(true, CHAT_BODY),
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(header(":status", "200"))
                            .addHeaders(header("content-type", "application/json"))))
            .build(),
        body(false, ANSWER_BODY));
  }

  /**
   * The headers-only stream with Envoy's native AI metadata (docs/envoy.md): request headers with
   * content-length, protocol_config request body NONE / response body STREAMED and the typed
   * request info of {@link #CHAT_BODY} in {@code metadata_context}; response headers; the JSON
   * answer with end_of_stream and the typed token usage the AI protocol manager publishes.
   */
  public static List<ProcessingRequest> headersOnlyMessages() {
    HeaderMap.Builder headers = requestHeaderMap().toBuilder();
    headers.addHeaders(
        header(
            "content-length",
            Integer.toString(CHAT_BODY.getBytes(java.nio.charset.StandardCharsets.UTF_8).length)));
    var info =
        io.sluice.emulator.AiFilters.requestInfo(
                CHAT_BODY.getBytes(java.nio.charset.StandardCharsets.UTF_8))
            .orElseThrow();
    var usage =
        io.sluice.emulator.AiFilters.tokenUsage(
                ANSWER_BODY.getBytes(java.nio.charset.StandardCharsets.UTF_8))
            .orElseThrow();
    List<ProcessingRequest> llm = messages();
    return List.of(
        ProcessingRequest.newBuilder()
            .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(headers))
            .setProtocolConfig(
                ProtocolConfiguration.newBuilder()
                    .setRequestBodyMode(BodySendMode.NONE)
                    .setResponseBodyMode(BodySendMode.STREAMED))
            .setMetadataContext(
                io.envoyproxy.envoy.config.core.v3.Metadata.newBuilder()
                    .putTypedFilterMetadata(info.namespace(), info.typed()))
            .build(),
        llm.get(2),
        llm.get(3).toBuilder()
            .setMetadataContext(
                io.envoyproxy.envoy.config.core.v3.Metadata.newBuilder()
                    .putTypedFilterMetadata(usage.namespace(), usage.typed()))
            .build());
  }

  /** {@link #messages()} serialized, as they arrive on the wire. */
  public static byte[][] messageBytes() {
    return messages().stream().map(ProcessingRequest::toByteArray).toArray(byte[][]::new);
  }

  private static ProcessingRequest body(boolean request, String json) {
    HttpBody body = HttpBody.newBuilder().setEndOfStream(true).setBody(utf8(json)).build();
    ProcessingRequest.Builder b = ProcessingRequest.newBuilder();
    return (request ? b.setRequestBody(body) : b.setResponseBody(body)).build();
  }

  private static HeaderMap requestHeaderMap() {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    for (String[] kv : REQUEST_HEADERS) {
      map.addHeaders(header(kv[0], kv[1]));
    }
    return map.build();
  }

  private static HeaderValue header(String key, String value) {
    return HeaderValue.newBuilder().setKey(key).setRawValue(utf8(value)).build();
  }

  private static ByteString utf8(String s) {
    return ByteString.copyFromUtf8(s);
  }
}
