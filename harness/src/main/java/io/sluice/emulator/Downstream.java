package io.sluice.emulator;

import com.google.protobuf.Struct;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.UpstreamRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/** What the client of one exchange receives, and when: headers, body chunks, reply details. */
final class Downstream {
  private final LongSupplier clock;
  private boolean headersSent;
  private int status;
  private HttpHeaders headers = new HttpHeaders();
  private final List<byte[]> chunks = new ArrayList<>();
  private HttpHeaders trailers = new HttpHeaders();
  private long headersAtNanos = -1;
  private long firstByteAtNanos = -1;
  private String details = "via_upstream";

  Downstream(LongSupplier clock) {
    this.clock = clock;
  }

  boolean headersSent() {
    return headersSent;
  }

  void details(String details) {
    this.details = details;
  }

  /** Sends {@code responseHeaders} (a copy) once; false if headers went downstream before. */
  boolean sendHeaders(HttpHeaders responseHeaders) {
    if (headersSent) {
      return false;
    }
    headersSent = true;
    headers = responseHeaders.copy();
    status = Integer.parseInt(responseHeaders.first(":status").orElse("200"));
    headersAtNanos = clock.getAsLong();
    return true;
  }

  void emit(byte[] data) {
    if (data.length == 0) {
      return;
    }
    if (firstByteAtNanos < 0) {
      firstByteAtNanos = clock.getAsLong();
    }
    chunks.add(data);
  }

  /** The response's trailers after its body (a copy). */
  void trailers(HttpHeaders responseTrailers) {
    trailers = responseTrailers.copy();
  }

  /** A local reply replaces whatever body was on its way. */
  void clearBody() {
    chunks.clear();
  }

  HttpResult result(
      Outcome outcome,
      long startNanos,
      long endNanos,
      Struct dynamicMetadata,
      boolean bypassed,
      Optional<UpstreamRequest> upstreamRequest,
      @Nullable Route route,
      long routerTimeoutMillis) {
    Optional<Duration> toHeaders =
        headersAtNanos < 0
            ? Optional.empty()
            : Optional.of(Duration.ofNanos(headersAtNanos - startNanos));
    Optional<Duration> toFirstByte =
        firstByteAtNanos >= 0
            ? Optional.of(Duration.ofNanos(firstByteAtNanos - startNanos))
            : toHeaders;
    return new HttpResult(
        outcome,
        headersSent ? status : 0,
        headers,
        chunks,
        details,
        dynamicMetadata,
        bypassed,
        upstreamRequest,
        toHeaders,
        toFirstByte,
        Duration.ofNanos(endNanos - startNanos),
        Optional.ofNullable(route).map(Route::name),
        route == null ? Optional.empty() : Optional.of(Duration.ofMillis(routerTimeoutMillis)),
        trailers);
  }
}
