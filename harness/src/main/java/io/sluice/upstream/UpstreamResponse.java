package io.sluice.upstream;

import java.nio.charset.StandardCharsets;
import java.util.List;

/** Upstream response headers plus a body that may arrive later, chunk by chunk. */
public record UpstreamResponse(int status, HttpHeaders headers, ResponseBody body) {
  public UpstreamResponse {
    if (status < 100 || status > 999) {
      throw new IllegalArgumentException("status: " + status + " (expected: 100..999)");
    }
    headers = headers.copy();
  }

  @Override
  public HttpHeaders headers() {
    return headers.copy();
  }

  /** A response whose body chunks are all available at once. */
  public static UpstreamResponse of(int status, HttpHeaders headers, List<byte[]> chunks) {
    return new UpstreamResponse(status, headers, ResponseBody.of(chunks));
  }

  /** A single-chunk UTF-8 body followed by {@code trailers} (a gRPC upstream's status). */
  public static UpstreamResponse withTrailers(
      int status, HttpHeaders headers, String body, HttpHeaders trailers) {
    return new UpstreamResponse(
        status, headers, ResponseBody.of(List.of(body.getBytes(StandardCharsets.UTF_8)), trailers));
  }

  /** A single-chunk UTF-8 body (or no body when {@code body} is empty). */
  public static UpstreamResponse of(int status, HttpHeaders headers, String body) {
    return of(
        status,
        headers,
        body.isEmpty() ? List.of() : List.of(body.getBytes(StandardCharsets.UTF_8)));
  }
}
