package io.sluice.upstream;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** A response body delivered as chunks, pushed to one subscriber. */
public interface ResponseBody {

  /** Receives body chunks; the last call has {@code endOfStream} true. */
  interface Sink {
    void onData(byte[] data, boolean endOfStream);
  }

  /**
   * Starts delivery. Chunks may be pushed from any thread, in order, never concurrently. Returns a
   * handle that stops delivery (the downstream went away); it is safe to call more than once.
   */
  Runnable subscribe(Sink sink);

  /** True when the response ends with its headers (Envoy's headers end_of_stream). */
  default boolean isEmpty() {
    return false;
  }

  /**
   * The trailers that follow the last chunk (a gRPC upstream's {@code grpc-status}), or empty when
   * none do. A response without a body has none (its trailers-only form is its headers).
   */
  default Optional<HttpHeaders> trailers() {
    return Optional.empty();
  }

  static ResponseBody empty() {
    return of(List.of());
  }

  /** All chunks at once, then {@code trailers} (none when empty). */
  static ResponseBody of(List<byte[]> chunks, HttpHeaders trailers) {
    ResponseBody body = of(chunks);
    Optional<HttpHeaders> t =
        trailers.entries().isEmpty() || body.isEmpty()
            ? Optional.empty()
            : Optional.of(trailers.copy());
    return new ResponseBody() {
      @Override
      public Runnable subscribe(Sink sink) {
        return body.subscribe(sink);
      }

      @Override
      public boolean isEmpty() {
        return body.isEmpty();
      }

      @Override
      public Optional<HttpHeaders> trailers() {
        return t.map(HttpHeaders::copy);
      }
    };
  }

  /** All chunks at once, delivered synchronously on subscribe. */
  static ResponseBody of(List<byte[]> chunks) {
    List<byte[]> copy = new ArrayList<>();
    for (byte[] c : chunks) {
      copy.add(c.clone());
    }
    return new ResponseBody() {
      @Override
      public Runnable subscribe(Sink sink) {
        for (int i = 0; i < copy.size(); i++) {
          sink.onData(copy.get(i), i == copy.size() - 1);
        }
        return () -> {};
      }

      @Override
      public boolean isEmpty() {
        return copy.isEmpty();
      }
    };
  }
}
