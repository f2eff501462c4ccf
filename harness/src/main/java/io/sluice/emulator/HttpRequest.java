package io.sluice.emulator;

import com.google.protobuf.Struct;
import io.sluice.upstream.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One downstream HTTP request as it reaches the emulated Envoy, plus the per-route and test-only
 * knobs that apply to it.
 *
 * @param method {@code :method}
 * @param path {@code :path}
 * @param authority {@code :authority}
 * @param scheme {@code :scheme}
 * @param headers regular client headers (names are lower-cased)
 * @param bodyChunks request body as it arrives from the client; BUFFERED mode sends it as one
 *     message, STREAMED mode one message per chunk
 * @param requestId {@code x-request-id} value; empty means generate one (as the HCM does)
 * @param routeGrpcInitialMetadata per-route {@code ExtProcPerRoute.overrides.grpc_initial_metadata}
 *     (merged into the filter's metadata, route wins)
 * @param routeDisabled per-route {@code ExtProcPerRoute.disabled}: no stream at all
 * @param requestAttributes per-request values of {@code request_attributes} (win over {@link
 *     FilterConfig#requestAttributes()}), e.g. the route metadata read through CEL
 * @param streamMetadata dynamic metadata that earlier (trusted) filters put on the stream, keyed by
 *     namespace; only namespaces in {@link FilterConfig#forwardingNamespaces()} are forwarded
 * @param cancelAfterPhase the client disconnects right after this phase, if present
 * @param cancelAfterDelay the client disconnects this long after the request started, if present
 */
public record HttpRequest(
    String method,
    String path,
    String authority,
    String scheme,
    HttpHeaders headers,
    List<byte[]> bodyChunks,
    Optional<String> requestId,
    Map<String, String> routeGrpcInitialMetadata,
    boolean routeDisabled,
    Map<String, Object> requestAttributes,
    Map<String, Struct> streamMetadata,
    Optional<Phase> cancelAfterPhase,
    Optional<Duration> cancelAfterDelay) {

  /** Points in the exchange after which a test can make the client disconnect. */
  public enum Phase {
    /** request_headers was sent to the processor. */
    REQUEST_HEADERS_SENT,
    /** the (last) request_body message was sent to the processor. */
    REQUEST_BODY_SENT,
    /** the request went to the upstream. */
    UPSTREAM_REQUEST_SENT,
    /** response_headers was sent to the processor. */
    RESPONSE_HEADERS_SENT,
    /** the response headers went downstream. */
    RESPONSE_HEADERS_DOWNSTREAM
  }

  public HttpRequest {
    headers = headers.copy();
    List<byte[]> chunks = new ArrayList<>();
    for (byte[] c : bodyChunks) {
      chunks.add(c.clone());
    }
    bodyChunks = List.copyOf(chunks);
    routeGrpcInitialMetadata = Map.copyOf(routeGrpcInitialMetadata);
    requestAttributes = Map.copyOf(requestAttributes);
    streamMetadata = Map.copyOf(streamMetadata);
  }

  @Override
  public HttpHeaders headers() {
    return headers.copy();
  }

  /** The whole body (all chunks concatenated). */
  public byte[] body() {
    int n = 0;
    for (byte[] c : bodyChunks) {
      n += c.length;
    }
    byte[] all = new byte[n];
    int at = 0;
    for (byte[] c : bodyChunks) {
      System.arraycopy(c, 0, all, at, c.length);
      at += c.length;
    }
    return all;
  }

  public static Builder post(String path, String jsonBody) {
    return builder()
        .method("POST")
        .path(path)
        .header("content-type", "application/json")
        .body(jsonBody);
  }

  public static Builder get(String path) {
    return builder().method("GET").path(path);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder; defaults: GET / on host {@code llm.example}, scheme http, no body. */
  public static final class Builder {
    private String method = "GET";
    private String path = "/";
    private String authority = "llm.example";
    private String scheme = "http";
    private final HttpHeaders headers = new HttpHeaders();
    private final List<byte[]> bodyChunks = new ArrayList<>();
    private @Nullable String requestId;
    private final Map<String, String> routeGrpcInitialMetadata = new LinkedHashMap<>();
    private boolean routeDisabled;
    private final Map<String, Object> requestAttributes = new LinkedHashMap<>();
    private final Map<String, Struct> streamMetadata = new LinkedHashMap<>();
    private @Nullable Phase cancelAfterPhase;
    private @Nullable Duration cancelAfterDelay;

    private Builder() {}

    public Builder method(String method) {
      this.method = method;
      return this;
    }

    public Builder path(String path) {
      this.path = path;
      return this;
    }

    public Builder authority(String authority) {
      this.authority = authority;
      return this;
    }

    public Builder scheme(String scheme) {
      this.scheme = scheme;
      return this;
    }

    public Builder header(String name, String value) {
      headers.add(name, value);
      return this;
    }

    /** Replaces the body with one UTF-8 chunk. */
    public Builder body(String body) {
      bodyChunks.clear();
      if (!body.isEmpty()) {
        bodyChunks.add(body.getBytes(StandardCharsets.UTF_8));
      }
      return this;
    }

    /** Appends one body chunk. */
    public Builder bodyChunk(byte[] chunk) {
      bodyChunks.add(chunk.clone());
      return this;
    }

    public Builder requestId(String requestId) {
      this.requestId = requestId;
      return this;
    }

    public Builder routeGrpcInitialMetadata(String key, String value) {
      routeGrpcInitialMetadata.put(key, value);
      return this;
    }

    public Builder routeDisabled(boolean disabled) {
      this.routeDisabled = disabled;
      return this;
    }

    public Builder requestAttribute(String expression, Object value) {
      requestAttributes.put(expression, value);
      return this;
    }

    public Builder streamMetadata(String namespace, Struct value) {
      streamMetadata.put(namespace, value);
      return this;
    }

    public Builder cancelAfter(Phase phase) {
      this.cancelAfterPhase = phase;
      return this;
    }

    public Builder cancelAfter(Duration delay) {
      this.cancelAfterDelay = delay;
      return this;
    }

    public HttpRequest build() {
      return new HttpRequest(
          method,
          path,
          authority,
          scheme,
          headers,
          bodyChunks,
          Optional.ofNullable(requestId),
          routeGrpcInitialMetadata,
          routeDisabled,
          requestAttributes,
          streamMetadata,
          Optional.ofNullable(cancelAfterPhase),
          Optional.ofNullable(cancelAfterDelay));
    }
  }
}
