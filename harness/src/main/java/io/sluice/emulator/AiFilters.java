package io.sluice.emulator;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * What Envoy's AI filters publish as dynamic metadata, for the emulator's chain ({@link
 * FilterConfig#aiFilters()}; docs/envoy.md "Envoy's native AI metadata"):
 *
 * <ul>
 *   <li>the request-info filter (envoyproxy/envoy#47383): {@code envoy.data.ai.v3.RequestInfo}
 *       under {@code envoy.ai.request_info}, from the parsed request body, before ext_proc's first
 *       message;
 *   <li>the AI protocol manager (envoyproxy/envoy#46603): {@code envoy.data.ai.v3.TokenUsage} under
 *       {@code envoy.ai.token_usage}, at a 2xx response's clean end of stream, in both forms
 *       (typed, and the untyped {@code Struct} projection with the same field names); nothing when
 *       the response carried no usage, a status-only {@code FAILED} record when its usage could not
 *       be read.
 * </ul>
 *
 * <p>The typed records are encoded by hand against the upstream field numbers (java-control-plane's
 * artifact carries no {@code envoy.data.ai.v3} classes). Stateless.
 */
public final class AiFilters {
  public static final String REQUEST_INFO_NAMESPACE = "envoy.ai.request_info";
  public static final String TOKEN_USAGE_NAMESPACE = "envoy.ai.token_usage";
  public static final String REQUEST_INFO_TYPE_URL =
      "type.googleapis.com/envoy.data.ai.v3.RequestInfo";
  public static final String TOKEN_USAGE_TYPE_URL =
      "type.googleapis.com/envoy.data.ai.v3.TokenUsage";

  private static final ObjectMapper JSON = new ObjectMapper();

  private AiFilters() {}

  /** One record in both forms. */
  public record Published(String namespace, Any typed, Struct untyped) {}

  /** The request info of a JSON request body, or empty when the body is not a JSON object. */
  public static Optional<Published> requestInfo(byte[] body) {
    JsonNode b;
    try {
      b = JSON.readTree(body);
    } catch (IOException e) {
      return Optional.empty();
    }
    if (b == null || !b.isObject()) {
      return Optional.empty();
    }
    String model = b.path("model").isTextual() ? b.path("model").asText() : null;
    Boolean stream = b.path("stream").isBoolean() ? b.path("stream").asBoolean() : null;
    Long max = null;
    for (String k : new String[] {"max_completion_tokens", "max_tokens", "max_output_tokens"}) {
      if (b.path(k).canConvertToLong() && b.path(k).asLong() >= 0) {
        max = b.path(k).asLong();
        break;
      }
    }
    JsonNode messages = b.path("messages").isArray() ? b.path("messages") : b.path("input");
    Integer count = messages.isArray() ? messages.size() : null;
    Integer tools = b.path("tools").isArray() ? b.path("tools").size() : null;
    return Optional.of(requestInfo(model, stream, max, count, tools));
  }

  /** A request-info record of these fields (null: absent). */
  public static Published requestInfo(
      @Nullable String model,
      @Nullable Boolean stream,
      @Nullable Long maxOutputTokens,
      @Nullable Integer messages,
      @Nullable Integer tools) {
    Struct.Builder s = Struct.newBuilder();
    byte[] typed =
        encode(
            out -> {
              if (model != null) {
                out.writeString(2, model);
                s.putFields("model", str(model));
              }
              if (stream != null) {
                wrapped(out, 3, stream ? 1 : 0);
                s.putFields("stream", Value.newBuilder().setBoolValue(stream).build());
              }
              if (maxOutputTokens != null) {
                wrapped(out, 4, maxOutputTokens);
                s.putFields("max_output_tokens", num(maxOutputTokens));
              }
              if (messages != null) {
                wrapped(out, 5, messages);
                s.putFields("message_count", num(messages));
              }
              if (tools != null) {
                wrapped(out, 6, tools);
                s.putFields("tool_count", num(tools));
              }
            });
    return new Published(REQUEST_INFO_NAMESPACE, any(REQUEST_INFO_TYPE_URL, typed), s.build());
  }

  /**
   * The token usage of a 2xx response body (JSON, or an event stream's last usage), or empty when
   * it carried none (Envoy then publishes nothing).
   */
  public static Optional<Published> tokenUsage(byte[] body) {
    String text = new String(body, StandardCharsets.UTF_8);
    JsonNode usage = null;
    boolean unreadable = false;
    if (text.stripLeading().startsWith("{")) {
      try {
        usage = JSON.readTree(text).get("usage");
      } catch (IOException e) {
        unreadable = true;
      }
    } else {
      for (String line : text.split("\n")) {
        if (!line.startsWith("data:") || line.contains("[DONE]")) {
          continue;
        }
        try {
          JsonNode u = JSON.readTree(line.substring(5).trim()).get("usage");
          if (u != null && u.isObject()) {
            usage = u;
          }
        } catch (IOException e) {
          unreadable = true;
        }
      }
    }
    if (usage == null || !usage.isObject()) {
      return unreadable ? Optional.of(tokenUsage(null, null, 0, 3)) : Optional.empty();
    }
    Long in = count(usage, "prompt_tokens", "input_tokens");
    Long out = count(usage, "completion_tokens", "output_tokens");
    long cached = usage.path("prompt_tokens_details").path("cached_tokens").asLong(0);
    int status = in == null && out == null ? 3 : unreadable ? 2 : 1;
    return Optional.of(tokenUsage(in, out, cached, status));
  }

  private static @Nullable Long count(JsonNode u, String a, String b) {
    JsonNode n = u.has(a) ? u.get(a) : u.get(b);
    return n != null && n.canConvertToLong() ? n.asLong() : null;
  }

  /**
   * A token-usage record: {@code status} 1 COMPLETE, 2 PARTIAL, 3 FAILED (a status-only record
   * carries no counts).
   */
  public static Published tokenUsage(
      @Nullable Long input, @Nullable Long output, long cached, int status) {
    Struct.Builder s = Struct.newBuilder();
    String[] names = {"EXTRACTION_STATUS_UNSPECIFIED", "COMPLETE", "PARTIAL", "FAILED"};
    byte[] typed =
        encode(
            out -> {
              if (input != null) {
                wrapped(out, 3, input);
                s.putFields("input_tokens", num(input));
              }
              if (output != null) {
                wrapped(out, 4, output);
                s.putFields("output_tokens", num(output));
              }
              if (input != null && output != null) {
                wrapped(out, 5, input + output);
                s.putFields("total_tokens", num(input + output));
              }
              if (cached > 0) {
                ByteArrayOutputStream d = new ByteArrayOutputStream();
                CodedOutputStream o = CodedOutputStream.newInstance(d);
                wrapped(o, 1, cached);
                o.flush();
                out.writeByteArray(6, d.toByteArray());
                s.putFields(
                    "input_token_details",
                    Value.newBuilder()
                        .setStructValue(Struct.newBuilder().putFields("cached_tokens", num(cached)))
                        .build());
              }
              out.writeEnum(9, status);
              s.putFields("extraction_status", str(names[status]));
            });
    return new Published(TOKEN_USAGE_NAMESPACE, any(TOKEN_USAGE_TYPE_URL, typed), s.build());
  }

  private interface Writer {
    void write(CodedOutputStream out) throws IOException;
  }

  private static byte[] encode(Writer w) {
    try {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      CodedOutputStream out = CodedOutputStream.newInstance(bytes);
      w.write(out);
      out.flush();
      return bytes.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A {@code google.protobuf.*Value} wrapper as field {@code field}: its field 1, a varint. */
  private static void wrapped(CodedOutputStream out, int field, long v) throws IOException {
    int size = CodedOutputStream.computeUInt64Size(1, v);
    out.writeTag(field, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
    out.writeUInt32NoTag(size);
    out.writeUInt64(1, v);
  }

  private static Any any(String typeUrl, byte[] value) {
    return Any.newBuilder().setTypeUrl(typeUrl).setValue(ByteString.copyFrom(value)).build();
  }

  private static Value str(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  private static Value num(long n) {
    return Value.newBuilder().setNumberValue(n).build();
  }
}
