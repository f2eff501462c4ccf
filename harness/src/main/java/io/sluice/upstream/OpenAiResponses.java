package io.sluice.upstream;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** The OpenAI-compatible pieces the simulated upstream answers with: SSE events and errors. */
final class OpenAiResponses {
  private static final ObjectMapper JSON = new ObjectMapper();

  private OpenAiResponses() {}

  static String token(int i) {
    return "tok" + i + " ";
  }

  static byte[] sse(ObjectNode event) {
    return ("data: " + event + "\n\n").getBytes(StandardCharsets.UTF_8);
  }

  /** A throttled answer: 429 or 503 with an OpenAI-style error and {@code retry-after}. */
  static UpstreamResponse throttled(int status, Duration retryAfter) {
    long seconds = Math.max(1, (retryAfter.toMillis() + 999) / 1000);
    return status == 429
        ? error(
            429,
            "rate_limit_exceeded",
            "Rate limit reached, retry later",
            Map.of("retry-after", Long.toString(seconds)))
        : error(
            503,
            "overloaded",
            "The server is overloaded, retry later",
            Map.of("retry-after", Long.toString(seconds)));
  }

  static UpstreamResponse error(
      int status, String type, String message, Map<String, String> extraHeaders) {
    ObjectNode e = JSON.createObjectNode();
    e.putObject("error").put("message", message).put("type", type).put("code", type);
    byte[] body = e.toString().getBytes(StandardCharsets.UTF_8);
    HttpHeaders headers =
        HttpHeaders.of(
            "content-type", "application/json", "content-length", Integer.toString(body.length));
    extraHeaders.forEach(headers::add);
    return UpstreamResponse.of(status, headers, List.of(body));
  }

  static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) {
      n += p.length;
    }
    byte[] all = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, all, at, p.length);
      at += p.length;
    }
    return all;
  }
}
