package io.sluice.emulator;

import com.google.protobuf.Struct;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.UpstreamRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * What the downstream client observed, plus what the emulated Envoy did on the way.
 *
 * @param outcome how the exchange ended
 * @param status HTTP status the client received (0 if the client received no headers)
 * @param headers response headers the client received (with {@code :status})
 * @param bodyChunks response body chunks in the order the client received them
 * @param responseCodeDetails like Envoy's {@code %RESPONSE_CODE_DETAILS%}: {@code via_upstream},
 *     the ImmediateResponse details, {@code ext_proc_error_per-message_timeout_exceeded}, …
 * @param dynamicMetadata stream dynamic metadata written by the processor (receiving namespaces
 *     only), keyed by namespace
 * @param extProcBypassed true when a phase that ext_proc should have handled passed unprocessed
 *     (fail-open after an error/timeout/spurious message, or the server closed the stream OK)
 * @param upstreamRequest the request as forwarded to the upstream, empty if it never was
 * @param timeToResponseHeaders from start until response headers went downstream
 * @param timeToFirstByte from start until the first response body byte (or the headers if there is
 *     no body) went downstream
 * @param total from start until the exchange ended
 * @param routeName the route the router forwarded by (its {@link Route#name()}), empty if the
 *     request never reached the router or no route matched
 * @param routerTimeout the router's final global timeout for this request (route {@code timeout} or
 *     the timeout headers, {@code FilterUtility::finalTimeout}); {@link Duration#ZERO} = disabled;
 *     empty if the request never reached the router or no route matched
 * @param trailers the response trailers the client received after the body (a gRPC upstream's
 *     {@code grpc-status}, as the processor left them); empty when none came
 */
public record HttpResult(
    Outcome outcome,
    int status,
    HttpHeaders headers,
    List<byte[]> bodyChunks,
    String responseCodeDetails,
    Struct dynamicMetadata,
    boolean extProcBypassed,
    Optional<UpstreamRequest> upstreamRequest,
    Optional<Duration> timeToResponseHeaders,
    Optional<Duration> timeToFirstByte,
    Duration total,
    Optional<String> routeName,
    Optional<Duration> routerTimeout,
    HttpHeaders trailers) {

  /** How an exchange ended. */
  public enum Outcome {
    /** the upstream's response (possibly mutated) was delivered completely. */
    UPSTREAM_RESPONSE,
    /** Envoy sent a local reply (ImmediateResponse, 500 or 504 from ext_proc errors). */
    LOCAL_REPLY,
    /**
     * the downstream stream was reset after its response headers were sent (e.g. the router's
     * timeout fired while the body was streaming): the client saw a truncated response.
     */
    DOWNSTREAM_RESET,
    /** the client disconnected ({@link HttpRequest.Phase} or delay). */
    CLIENT_CANCELLED
  }

  public HttpResult {
    headers = headers.copy();
    bodyChunks = List.copyOf(bodyChunks);
    trailers = trailers.copy();
  }

  /** A result that never reached the emulated router (no route name, no router timeout). */
  public static HttpResult beforeRouter(
      Outcome outcome,
      int status,
      HttpHeaders headers,
      List<byte[]> bodyChunks,
      String responseCodeDetails,
      Struct dynamicMetadata,
      boolean extProcBypassed,
      Optional<UpstreamRequest> upstreamRequest,
      Optional<Duration> timeToResponseHeaders,
      Optional<Duration> timeToFirstByte,
      Duration total) {
    return new HttpResult(
        outcome,
        status,
        headers,
        bodyChunks,
        responseCodeDetails,
        dynamicMetadata,
        extProcBypassed,
        upstreamRequest,
        timeToResponseHeaders,
        timeToFirstByte,
        total,
        Optional.empty(),
        Optional.empty(),
        new HttpHeaders());
  }

  @Override
  public HttpHeaders headers() {
    return headers.copy();
  }

  public Optional<String> header(String name) {
    return headers.first(name);
  }

  @Override
  public HttpHeaders trailers() {
    return trailers.copy();
  }

  /** A response trailer's first value, if the client received one. */
  public Optional<String> trailer(String name) {
    return trailers.first(name);
  }

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

  public String bodyUtf8() {
    return new String(body(), StandardCharsets.UTF_8);
  }
}
