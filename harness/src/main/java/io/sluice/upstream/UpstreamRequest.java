package io.sluice.upstream;

/**
 * The request as the upstream sees it: headers after every ext_proc mutation (pseudo-headers
 * included) and the complete, possibly mutated, body.
 */
public record UpstreamRequest(HttpHeaders headers, byte[] body) {
  public UpstreamRequest {
    headers = headers.copy();
    body = body.clone();
  }

  public String method() {
    return headers.first(":method").orElse("GET");
  }

  public String path() {
    return headers.first(":path").orElse("/");
  }

  @Override
  public HttpHeaders headers() {
    return headers.copy();
  }

  @Override
  public byte[] body() {
    return body.clone();
  }

  public String bodyUtf8() {
    return new String(body, java.nio.charset.StandardCharsets.UTF_8);
  }
}
