package io.sluice.observability;

/**
 * Counts of the adapter's streams, read at scrape time: the adapter keeps them where it already
 * tracks its open streams, so the per-stream path updates no meter of its own.
 */
public interface StreamTally {
  /** The ways a stream ends, as the {@code event} tag of {@code sluice_extproc_streams_total}. */
  enum Close {
    COMPLETED("completed"),
    CANCELLED("cancelled"),
    FAILED("failed");

    private final String tag;

    Close(String tag) {
      this.tag = tag;
    }

    public String tag() {
      return tag;
    }
  }

  long opened();

  long closed(Close how);

  /** Streams opened and not yet closed. */
  int open();
}
