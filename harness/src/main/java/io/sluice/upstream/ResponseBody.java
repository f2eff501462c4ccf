package io.sluice.upstream;

import java.util.ArrayList;
import java.util.List;

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

  static ResponseBody empty() {
    return of(List.of());
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
